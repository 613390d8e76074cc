package pgstore_test

import (
	"strings"
	"testing"

	"github.com/doppelfs/doppel/internal/meta/pgstore"
)

// FuzzRedact plants a password in a connection string, as a URL's user
// part, as a URL's password parameter or as a key=value string's, around
// arbitrary other parts (which need not parse): Redact must never show it.
func FuzzRedact(f *testing.F) {
	f.Add(uint8(0), "u", "s3cret", "h:5432", "db", "sslmode=off")
	f.Add(uint8(0), "u", "s3%ZZcret", "h", "db", "")
	f.Add(uint8(0), "u", "s3cret", "h:port", "db", "")
	f.Add(uint8(1), "u", "s3cret;x=1", "h", "db", "sslmode=off")
	f.Add(uint8(1), "u", "s3cret", "h", "db", "a=%ZZ")
	f.Add(uint8(2), "u", "s3cret", "h", "db", "")
	f.Fuzz(func(t *testing.T, form uint8, user, pw, host, db, query string) {
		if len(pw) < 4 || strings.Contains("xxxxx", pw) {
			return // too short to tell from other text, or the mask itself
		}
		var conn string
		switch form % 3 {
		case 0:
			if strings.ContainsAny(pw+user, "/?#@") {
				return // ends or moves the user part: no longer a password
			}
			conn = "postgres://" + user + ":" + pw + "@" + host + "/" + db + "?" + query
		case 1:
			if strings.ContainsAny(pw, "&#") {
				return // ends the parameter
			}
			conn = "postgres://" + user + "@" + host + "/" + db + "?" + query + "&password=" + pw
		case 2:
			if strings.ContainsAny(pw, " \t\n\v\f\r'\\") {
				return // ends the value, or quotes it
			}
			conn = "host=" + host + " password=" + pw + " dbname=" + db
		}
		if strings.Count(conn, pw) != 1 {
			return // the same text elsewhere: not only the password
		}
		if got := pgstore.Redact(conn); strings.Contains(got, pw) {
			t.Fatalf("Redact(%q) = %q shows the password %q", conn, got, pw)
		}
	})
}
