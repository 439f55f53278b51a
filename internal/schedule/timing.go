package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Kinds of timing.
const (
	KindCron  = "cron"  // a five-field cron expression, in the schedule's zone
	KindEvery = "every" // a duration, counted from when the schedule was made
	KindAt    = "at"    // one RFC 3339 time
)

// What a run missed while parley was down becomes.
const (
	MissedRunOnce = "run-once" // one run, at once, for all that were missed
	MissedSkip    = "skip"     // none: the next run is the next one due
)

// MinEvery is the shortest --every: a schedule is not a busy loop.
const MinEvery = time.Minute

// cronParser reads standard five-field expressions and the descriptors
// (@daily, @hourly…); robfig/cron, never a hand parser.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// timing says when a schedule's runs are due.
type timing interface {
	// next is the first due time strictly after t; zero for none.
	next(t time.Time) time.Time
}

type cronTiming struct {
	spec cron.Schedule
	loc  *time.Location
}

// next reads the expression in the schedule's zone: the parser's zone is
// time.Local, which robfig/cron takes as "the zone of the time given".
func (c cronTiming) next(t time.Time) time.Time { return c.spec.Next(t.In(c.loc)) }

// everyTiming is due at anchor + k·every, k ≥ 1: the same instants whatever
// the downtime, so a due time names one run.
type everyTiming struct {
	anchor time.Time
	every  time.Duration
}

func (e everyTiming) next(t time.Time) time.Time {
	if t.Before(e.anchor) {
		return e.anchor.Add(e.every)
	}
	k := t.Sub(e.anchor)/e.every + 1
	return e.anchor.Add(k * e.every)
}

type atTiming struct{ at time.Time }

func (a atTiming) next(t time.Time) time.Time {
	if t.Before(a.at) {
		return a.at
	}
	return time.Time{}
}

// loadZone reads a time zone name; "" and "Local" are the machine's.
func loadZone(tz string) (*time.Location, error) {
	if tz == "" || tz == "Local" {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: give an IANA name such as Europe/Paris or UTC", tz)
	}
	return loc, nil
}

// parseTiming reads a schedule's timing; anchor is when an --every counts from.
func parseTiming(kind, expr, tz string, anchor time.Time) (timing, error) {
	loc, err := loadZone(tz)
	if err != nil {
		return nil, err
	}
	switch kind {
	case KindCron:
		if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
			return nil, fmt.Errorf("cron %q names a time zone: give it with --tz instead", expr)
		}
		if strings.HasPrefix(expr, "@every") {
			return nil, fmt.Errorf("cron %q: use --every for a fixed interval", expr)
		}
		spec, err := cronParser.Parse(expr)
		if err != nil {
			return nil, fmt.Errorf("cron %q: %v (five fields: minute hour day-of-month month day-of-week, e.g. \"0 9 * * 1-5\")", expr, err)
		}
		return cronTiming{spec: spec, loc: loc}, nil
	case KindEvery:
		d, err := time.ParseDuration(expr)
		if err != nil {
			return nil, fmt.Errorf("every %q: not a duration (e.g. 90m, 2h)", expr)
		}
		if d < MinEvery {
			return nil, fmt.Errorf("every %q: at least %v between runs", expr, MinEvery)
		}
		return everyTiming{anchor: anchor, every: d}, nil
	case KindAt:
		at, err := time.Parse(time.RFC3339, expr)
		if err != nil {
			return nil, fmt.Errorf("at %q: not an RFC 3339 time (e.g. 2026-12-24T09:00:00Z)", expr)
		}
		return atTiming{at: at}, nil
	}
	return nil, fmt.Errorf("say when: one of cron, every and at")
}
