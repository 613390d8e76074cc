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
	m, err := doppelMountOf(mountpoint)
	return m.Source, err
}

// doppelMountOf returns the doppel mount at mountpoint.
func doppelMountOf(mountpoint string) (mountEntry, error) {
	m, ok, err := findMount(mountpoint)
	if err != nil {
		return mountEntry{}, err
	}
	if !ok {
		return mountEntry{}, fmt.Errorf("%s is not a mount point", mountpoint)
	}
	if m.FSType != fuseType {
		return mountEntry{}, errors.New(mountpoint + " is not a doppel mount (it is " + m.FSType + ")")
	}
	return m, nil
}
