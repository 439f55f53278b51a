package config

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// parseLimits reads a config text over the defaults and validates it.
func parseLimits(t testing.TB, text string) (Config, error) {
	t.Helper()
	dir := t.TempDir()
	cfg, err := Parse([]byte(text), "test.toml", Default(filepath.Join(dir, "data"), dir))
	if err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

func TestEveryNumberHasARange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want string // "" when the config is valid; else words the error must hold
	}{
		{"defaults", ``, ""},
		{"queue depth that crashed makechan", "[limits]\nqueue_depth = 9223372036854775807",
			"limits.queue_depth = 9223372036854775807 is out of range: want 1 to 10000"},
		{"queue depth zero", "[limits]\nqueue_depth = 0", "limits.queue_depth = 0 is out of range"},
		{"message size that broke every input", "[limits]\nmax_message_bytes = 9223372036854775807",
			"limits.max_message_bytes = 9223372036854775807 is out of range: want 1024 to 16777216"},
		{"message size negative", "[limits]\nmax_message_bytes = -1", "limits.max_message_bytes = -1"},
		{"message size at its top", "[limits]\nmax_message_bytes = 16777216", ""},
		{"rate nan", "[limits]\ninputs_per_second = nan", "limits.inputs_per_second = NaN is out of range"},
		{"rate inf", "[limits]\ninputs_per_second = inf", "limits.inputs_per_second = +Inf is out of range"},
		{"rate negative", "[limits]\ninputs_per_second = -3.5", "limits.inputs_per_second = -3.5"},
		{"rate fraction", "[limits]\ninputs_per_second = 0.5", ""},
		{"burst huge", "[limits]\ninput_burst = 1000000000", "limits.input_burst = 1000000000 is out of range: want 1 to 1000000"},
		{"conn buffer tiny", "[limits]\nconn_buffer = 1", "limits.conn_buffer = 1 is out of range: want 16 to 1048576"},
		{"replay tail huge", "[limits]\nreplay_tail = 99999999", "limits.replay_tail = 99999999"},
		{"idle timeout negative", "[limits]\nidle_timeout = \"-5m\"", `limits.idle_timeout = "-5m0s" is out of range`},
		{"idle timeout zero", "[limits]\nidle_timeout = \"0s\"", `limits.idle_timeout = "0s" is out of range`},
		{"idle timeout in days", "[limits]\nidle_timeout = \"2d\"", ""},
		{"sessions zero", "[limits]\nmax_sessions = 0", "limits.max_sessions = 0 is out of range: want 1 to 1000"},
		{"threads per minute huge", "[limits]\nthreads_per_minute = 1000000000", "limits.threads_per_minute = 1000000000"},
		{"read timeout zero", "[limits]\nread_timeout = \"0s\"", `limits.read_timeout = "0s" is out of range: want 100ms to 10m0s`},
		{"sockets zero", "[limits]\nmax_sockets = 0", "limits.max_sockets = 0 is out of range: want 1 to 1000000"},
		{"retention off", "[limits]\nretain_events = \"0\"", ""},
		{"retention in days", "[limits]\nretain_events = \"90d\"", ""},
		{"retention too short", "[limits]\nretain_events = \"1m\"", `limits.retain_events = "1m0s" is out of range: want 1h0m0s to 876000h0m0s (or "0": off)`},
		{"retention bad days", "[limits]\nretain_events = \"x9d\"", "want a whole number of days"},
		{"audit kept a year", "[audit]\nkeep = \"365d\"", ""},
		{"audit kept ten years", "[audit]\nkeep = \"3650d\"", ""},
		{"audit kept an hour", "[audit]\nkeep = \"1h\"", `audit.keep = "1h0m0s" is out of range: want 24h0m0s to 87600h0m0s`},
		{"audit kept for ever", "[audit]\nkeep = \"0\"", `audit.keep = "0s" is out of range`},
		{"audit kept too long", "[audit]\nkeep = \"3651d\"", `audit.keep = "87624h0m0s" is out of range`},
		{"log level unknown", `log_level = "loud"`, `log_level "loud": want one of debug, info, warn, error`},
		{"log level warn", `log_level = "warn"`, ""},
		{"port out of range", `addr = "127.0.0.1:99999"`, `addr "127.0.0.1:99999": the port "99999" is out of range: want 0 to 65535`},
		{"no port", `addr = "localhost"`, `addr "localhost": want host:port`},
		{"any port", `addr = "127.0.0.1:0"`, ""},
		{"agent idle timeout negative", "[[agent]]\nid = \"a\"\ntransport = \"stream\"\ncommand = \"x\"\nidle_timeout = \"-1s\"",
			`agent "a": idle_timeout = "-1s" is out of range`},
		{"plugin heartbeat too short", "[[plugin]]\nid = \"p\"\ncommand = \"x\"\nheartbeat = \"1ns\"",
			`plugin "p": heartbeat = "1ns" is out of range: want 100ms to 1h0m0s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseLimits(t, tt.text)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("got %v, want a valid config", err)
			case tt.want != "" && err == nil:
				t.Fatalf("got a valid config, want an error holding %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("got %q, want it to hold %q", err, tt.want)
			}
		})
	}
}

func TestEveryProblemIsNamedAtOnce(t *testing.T) {
	t.Parallel()
	_, err := parseLimits(t, "log_level = \"loud\"\n[limits]\nqueue_depth = 0\ninputs_per_second = nan")
	for _, key := range []string{"log_level", "limits.queue_depth", "limits.inputs_per_second"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("error %v does not name %s", err, key)
		}
	}
}

func TestDurationDays(t *testing.T) {
	t.Parallel()
	var d Duration
	if err := d.UnmarshalText([]byte("90d")); err != nil || d.Duration != 90*24*time.Hour {
		t.Fatalf("90d: got %v, %v; want 2160h", d.Duration, err)
	}
}

// FuzzParse: no config text crashes parsing, and a config that validates holds
// only values inside their ranges.
func FuzzParse(f *testing.F) {
	f.Add("[limits]\nqueue_depth = 9223372036854775807\ninputs_per_second = nan")
	f.Add("log_level = \"loud\"\naddr = \"[::1]:7430\"\n[limits]\nidle_timeout = \"90d\"")
	f.Add("[[agent]]\nid = \"a\"\ntransport = \"tmux\"\ncommand = \"c\"\nidle_timeout = \"1h\"\n[[plugin]]\nid = \"p\"\nargs = [\"x\"]\nheartbeat = \"1s\"")
	f.Fuzz(func(t *testing.T, text string) {
		cfg, err := parseLimits(t, text)
		if err != nil {
			return
		}
		l := cfg.Limits
		ints := []struct {
			v int
			r IntRange
		}{
			{l.MaxMessageBytes, MaxMessageRange}, {l.QueueDepth, QueueDepthRange}, {l.ConnBuffer, ConnBufferRange},
			{l.ReplayTail, ReplayTailRange}, {l.InputBurst, InputBurstRange}, {l.MaxSessions, MaxSessionsRange},
			{l.ThreadsPerMinute, ThreadsPerMinuteRange},
		}
		for _, c := range ints {
			if c.v < c.r.Min || c.v > c.r.Max {
				t.Fatalf("validated %d outside %v", c.v, c.r)
			}
		}
		if math.IsNaN(l.InputsPerSecond) || l.InputsPerSecond < InputsPerSecondRange.Min || l.InputsPerSecond > InputsPerSecondRange.Max {
			t.Fatalf("validated inputs_per_second %v", l.InputsPerSecond)
		}
		for _, a := range cfg.Agents {
			if a.IdleTimeout.Duration < IdleTimeoutRange.Min || a.IdleTimeout.Duration > IdleTimeoutRange.Max {
				t.Fatalf("validated agent idle_timeout %v", a.IdleTimeout)
			}
		}
	})
}
