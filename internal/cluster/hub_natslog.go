package cluster

import (
	"fmt"
	"log/slog"
	"sync/atomic"
)

// natsLogger hands the embedded server's log to parley's: notices at debug
// (the server is chatty at start), warnings and errors (a node's failed
// authentication, a slow consumer) at warn, a fatal error at error, kept so
// StartHub can say why the server did not start. Traces are not asked for, so
// no message payload is ever logged.
type natsLogger struct {
	log   *slog.Logger
	fatal atomic.Pointer[string]
}

func (l *natsLogger) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *natsLogger) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l *natsLogger) Errorf(format string, v ...any)  { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l *natsLogger) Debugf(string, ...any)           {}
func (l *natsLogger) Tracef(string, ...any)           {}

func (l *natsLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.fatal.Store(&msg)
	l.log.Error(msg)
}

// why is the fatal error, if there was one.
func (l *natsLogger) why() string {
	if p := l.fatal.Load(); p != nil {
		return ": " + *p
	}
	return ""
}
