// Package crashtest holds the power-loss simulation: a volume runs on a
// metadata store whose unsynced writes can be dropped (Pebble's strict
// in-memory file system) and a chunk store that drops every write not
// covered by a completed Sync, and is checked after a simulated power loss
// at a random moment. The package has no code outside its tests.
package crashtest
