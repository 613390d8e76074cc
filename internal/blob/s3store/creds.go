package s3store

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// Credentials sign requests. They format as [redacted] with every fmt
// verb, in slog and when marshalled (JSON, text; a slog JSON handler
// marshals a Config that holds them), so that no log line or error can
// carry them.
type Credentials struct {
	AccessKeyID, SecretAccessKey, SessionToken string
}

const redacted = "[redacted]"

func (Credentials) String() string                { return redacted }
func (Credentials) GoString() string              { return redacted }
func (Credentials) Format(f fmt.State, verb rune) { f.Write([]byte(redacted)) }
func (Credentials) LogValue() slog.Value          { return slog.StringValue(redacted) }
func (Credentials) MarshalText() ([]byte, error)  { return []byte(redacted), nil }
func (Credentials) MarshalJSON() ([]byte, error)  { return []byte(`"` + redacted + `"`), nil }

// LoadCredentials reads AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and
// AWS_SESSION_TOKEN) from the environment, else the profile AWS_PROFILE
// (default "default") of the shared credentials file
// (AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials).
func LoadCredentials() (Credentials, error) {
	id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if id != "" && secret != "" {
		return Credentials{id, secret, os.Getenv("AWS_SESSION_TOKEN")}, nil
	}
	path := os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return Credentials{}, errNoCredentials
		}
		path = filepath.Join(home, ".aws", "credentials")
	}
	profile := os.Getenv("AWS_PROFILE")
	if profile == "" {
		profile = "default"
	}
	c, err := readCredentialsFile(path, profile)
	if errors.Is(err, os.ErrNotExist) {
		return Credentials{}, errNoCredentials
	}
	return c, err
}

var errNoCredentials = errors.New("s3: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or write ~/.aws/credentials")

// readCredentialsFile reads one profile of an INI credentials file.
func readCredentialsFile(path, profile string) (Credentials, error) {
	f, err := os.Open(path)
	if err != nil {
		return Credentials{}, err
	}
	defer f.Close()
	var c Credentials
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			in = strings.TrimSpace(line[1:len(line)-1]) == profile
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !in || !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "aws_access_key_id":
			c.AccessKeyID = strings.TrimSpace(v)
		case "aws_secret_access_key":
			c.SecretAccessKey = strings.TrimSpace(v)
		case "aws_session_token":
			c.SessionToken = strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		return Credentials{}, fmt.Errorf("s3: read %s: %w", path, err)
	}
	if c.AccessKeyID == "" || c.SecretAccessKey == "" {
		return Credentials{}, fmt.Errorf("s3: %s has no access key and secret for profile %q", path, profile)
	}
	return c, nil
}
