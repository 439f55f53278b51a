package stream

import "bytes"

// kind names a stdout line for a mark (internal/marks): its type, and a
// stream event's type and delta's type ("stream_event/content_block_delta/
// text_delta": the agent's words).
func (l line) kind() string {
	k := l.Type
	if l.Subtype != "" {
		k += "/" + l.Subtype
	}
	if e := l.Event; e != nil {
		k += "/" + e.Type
		if e.Delta != nil {
			k += "/" + e.Delta.Type
		}
	}
	return k
}

// lineType names a stdin line for a mark: its type, read from the line's
// start as parley writes it ({"type":"user",...}).
func lineType(b []byte) string {
	b, ok := bytes.CutPrefix(b, []byte(`{"type":"`))
	if !ok {
		return ""
	}
	if i := bytes.IndexByte(b, '"'); i >= 0 {
		return string(b[:i])
	}
	return ""
}
