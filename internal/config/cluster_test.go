package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestClusterIsOffByDefaultAndItsKeysAreChecked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := Default(filepath.Join(dir, "data"), dir)
	cfg := base
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster.Enabled() {
		t.Fatal("a config without [cluster] takes part in a cluster")
	}
	for _, tc := range []struct{ text, want string }{
		{"[cluster]\nlisten = \"0.0.0.0:7431\"\nhub = \"h:7431\"", "not both"},
		{"[cluster]\nlisten = \"7431\"", `cluster.listen "7431": want host:port`},
		{"[cluster]\nlisten = \"0.0.0.0:99999\"", "out of range: want 0 to 65535"},
		{"[cluster]\nhub = \"hub:0\"", `cluster.hub "hub:0": the port "0" is out of range: want 1 to 65535`},
		{"[cluster]\nadvertise = \"hub:7431\"", "advertise is set without cluster.listen"},
		{"[cluster]\nhub = \"hub:7431\"\nnode = \"My.Laptop\"", `node name "My.Laptop"`},
		{"[cluster]\nhub = \"hub:7431\"\nheartbeat = \"10ms\"", `cluster.heartbeat = "10ms" is out of range: want 100ms to 5m0s`},
		{"[cluster]\nlisten = \"0.0.0.0:7431\"\ninput_wait = \"1m\"", `cluster.input_wait = "1m0s" is out of range: want 10m0s to 720h0m0s`},
		{"[cluster]\nlisten = \"0.0.0.0:7431\"\ninput_bytes = 1048576", `cluster.input_bytes = 1048576 is out of range: want 16777216 to 4294967296`},
		{"[cluster]\nlisten = \"0.0.0.0:7431\"\nstore_bytes = 1048576", `cluster.store_bytes = 1048576 is out of range: want 536870912 to 1125899906842624 (or 0`},
		{"[cluster]\nlisten = \"0.0.0.0:7431\"\ncopy_bytes = 1048576", `cluster.copy_bytes = 1048576 is out of range: want 16777216 to 4294967296`},
		{"[cluster]\nlisten = \"0.0.0.0:7431\"\ncopy_age = \"1m\"", `cluster.copy_age = "1m0s" is out of range: want 1h0m0s to 8760h0m0s`},
		{"[cluster]\nport = 1", "unknown keys: cluster.port"},
	} {
		cfg, err := Parse([]byte(tc.text), "test.toml", base)
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.text, err, tc.want)
		}
	}
	cfg, err := Parse([]byte("[cluster]\nhub = \"hub.example:7431\""), "test.toml", base)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if !cfg.Cluster.Enabled() || CheckNodeName(cfg.Cluster.Node) != nil || cfg.Cluster.Heartbeat.Duration != DefaultClusterHeartbeat ||
		cfg.Cluster.InputBytes != 64<<20 || cfg.Cluster.StoreBytes != 0 || cfg.Cluster.CopyBytes != 32<<20 ||
		cfg.Cluster.CopyAge.Duration != 7*24*time.Hour {
		t.Fatalf("a node's [cluster]: %+v, want the host name as a valid node name, the default heartbeat, 64 MiB of inputs per node", cfg.Cluster)
	}
}

func TestWriteClusterNodeKeepsTheRestOfTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := Default(filepath.Join(dir, "data"), dir)
	for _, tc := range []struct{ name, before string }{
		{"missing", ""},
		{"other keys", "log_level = \"debug\"\n[limits]\nqueue_depth = 8"},
		{"a cluster table", "[cluster]\nheartbeat = \"2s\"\n\n[limits]\nqueue_depth = 8\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sub", "config.toml")
			if tc.before != "" {
				os.MkdirAll(filepath.Dir(path), 0o700)
				os.WriteFile(path, []byte(tc.before), 0o640)
			}
			if err := WriteClusterNode(path, "hub.example:7431", "laptop"); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(path, base)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Cluster.Hub != "hub.example:7431" || cfg.Cluster.Node != "laptop" {
				t.Fatalf("after writing: %+v", cfg.Cluster)
			}
			if strings.Contains(tc.before, "queue_depth") && cfg.Limits.QueueDepth != 8 {
				t.Error("the file's other keys were lost")
			}
			if tc.name == "a cluster table" && cfg.Cluster.Heartbeat.Duration.String() != "2s" {
				t.Error("the [cluster] table's own keys were lost")
			}
			if err := WriteClusterNode(path, "other:7431", "laptop"); err == nil || !strings.Contains(err.Error(), "already joins hub hub.example:7431") {
				t.Fatalf("joining a second hub: %v, want refused", err)
			}
			// Joining the same hub again (after a revoke) leaves the file as it is.
			before, _ := os.ReadFile(path)
			if err := WriteClusterNode(path, "hub.example:7431", "laptop"); err != nil {
				t.Fatalf("joining the same hub again: %v", err)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Fatalf("joining the same hub again changed the file:\n%s", after)
			}
		})
	}
}
