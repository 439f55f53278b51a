package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"time"
)

// Every number a config may hold has a range here, so a value that would crash
// parley (a channel of 2^63 slots) or quietly disable a guard (a NaN rate) is
// refused at start with the key, the value and the range. The README's config
// section lists the same ranges.

// IntRange is the closed range an integer setting may take.
type IntRange struct{ Min, Max int }

// ByteRange is the closed range a size in bytes may take (int64: its bounds
// pass 2 GiB, more than an int holds on a 32-bit machine).
type ByteRange struct{ Min, Max int64 }

// FloatRange is the closed range a real setting may take (never NaN or ±Inf).
type FloatRange struct{ Min, Max float64 }

// DurationRange is the closed range a duration setting may take; Off, when
// set, also allows 0 (the setting's "off").
type DurationRange struct {
	Min, Max time.Duration
	Off      bool
}

// The ranges of [limits], an agent's idle_timeout and a plugin's heartbeat.
var (
	MaxMessageRange       = IntRange{1 << 10, 16 << 20}
	QueueDepthRange       = IntRange{1, 10_000}
	ConnBufferRange       = IntRange{16, 1 << 20}
	ReplayTailRange       = IntRange{1, 100_000}
	InputsPerSecondRange  = FloatRange{0.01, 1e6}
	InputBurstRange       = IntRange{1, 1_000_000}
	IdleTimeoutRange      = DurationRange{Min: 10 * time.Millisecond, Max: 365 * 24 * time.Hour}
	MaxSessionsRange      = IntRange{1, 1_000}
	ThreadsPerMinuteRange = IntRange{1, 100_000}
	HeartbeatRange        = DurationRange{Min: 100 * time.Millisecond, Max: time.Hour}
	RetainEventsRange     = DurationRange{Min: time.Hour, Max: 100 * 365 * 24 * time.Hour, Off: true}

	ReadTimeoutRange        = DurationRange{Min: 100 * time.Millisecond, Max: 10 * time.Minute}
	ConnIdleTimeoutRange    = DurationRange{Min: 100 * time.Millisecond, Max: 24 * time.Hour}
	MaxUnauthenticatedRange = IntRange{1, 100_000}
	MaxSocketsRange         = IntRange{1, 1_000_000}
)

var logLevels = []string{"debug", "info", "warn", "error"}

func (r IntRange) check(key string, v int) error {
	if v < r.Min || v > r.Max {
		return fmt.Errorf("%s = %d is out of range: want %d to %d", key, v, r.Min, r.Max)
	}
	return nil
}

func (r ByteRange) check(key string, v int64) error {
	if v < r.Min || v > r.Max {
		return fmt.Errorf("%s = %d is out of range: want %d to %d", key, v, r.Min, r.Max)
	}
	return nil
}

func (r FloatRange) check(key string, v float64) error {
	if math.IsNaN(v) || v < r.Min || v > r.Max {
		return fmt.Errorf("%s = %v is out of range: want a number from %v to %v", key, v, r.Min, r.Max)
	}
	return nil
}

func (r DurationRange) check(key string, v time.Duration) error {
	if r.Off && v == 0 || v >= r.Min && v <= r.Max {
		return nil
	}
	off := ""
	if r.Off {
		off = ` (or "0": off)`
	}
	return fmt.Errorf("%s = %q is out of range: want %s to %s%s", key, v.String(), r.Min, r.Max, off)
}

// check returns a problem for each limit out of its range.
func (l *Limits) check() []error {
	errs := []error{
		MaxMessageRange.check("limits.max_message_bytes", l.MaxMessageBytes),
		QueueDepthRange.check("limits.queue_depth", l.QueueDepth),
		ConnBufferRange.check("limits.conn_buffer", l.ConnBuffer),
		ReplayTailRange.check("limits.replay_tail", l.ReplayTail),
		InputsPerSecondRange.check("limits.inputs_per_second", l.InputsPerSecond),
		InputBurstRange.check("limits.input_burst", l.InputBurst),
		IdleTimeoutRange.check("limits.idle_timeout", l.IdleTimeout.Duration),
		MaxSessionsRange.check("limits.max_sessions", l.MaxSessions),
		ThreadsPerMinuteRange.check("limits.threads_per_minute", l.ThreadsPerMinute),
		RetainEventsRange.check("limits.retain_events", l.RetainEvents.Duration),
		ReadTimeoutRange.check("limits.read_timeout", l.ReadTimeout.Duration),
		ConnIdleTimeoutRange.check("limits.conn_idle_timeout", l.ConnIdleTimeout.Duration),
		MaxUnauthenticatedRange.check("limits.max_unauthenticated", l.MaxUnauthenticated),
		MaxSocketsRange.check("limits.max_sockets", l.MaxSockets),
	}
	return slices.DeleteFunc(errs, func(e error) bool { return e == nil })
}

// checkAddr wants host:port with a port from 0 (any free port) to 65535.
func checkAddr(addr string) error {
	if addr == "" {
		return errors.New("addr is empty")
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("addr %q: want host:port (e.g. 127.0.0.1:7430): %v", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("addr %q: the port %q is out of range: want 0 to 65535", addr, port)
	}
	return nil
}

// FrameLimit is the largest frame a transport reads for one input: room for a
// message of max bytes however its text is escaped in JSON (at worst six bytes
// a byte, \u00XX), so the transport never refuses what the router's limit
// allows; the router alone decides on a message's size.
func FrameLimit(max int) int64 { return 6*int64(max) + 64<<10 }
