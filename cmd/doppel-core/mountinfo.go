package main

import (
	"errors"
	"fmt"

	"github.com/doppelfs/doppel/internal/mountinfo"
)

type mountEntry = mountinfo.Entry

const fuseType = mountinfo.FuseType

func mounts() ([]mountEntry, error) { return mountinfo.Mounts() }

func findMount(path string) (mountEntry, bool, error) { return mountinfo.Find(path) }

// doppelStoreOf returns the store mounted at mountpoint.
func doppelStoreOf(mountpoint string) (string, error) {
	m, ok, err := findMount(mountpoint)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%s is not a mount point", mountpoint)
	}
	if m.FSType != fuseType {
		return "", errors.New(mountpoint + " is not a doppel mount (it is " + m.FSType + ")")
	}
	return m.Source, nil
}
