// Package transcript follows a Claude Code session's JSONL transcript (the path
// the hooks report as transcript_path, never "the newest file") and turns its
// records into parley's normalized updates: agent text, thoughts, tool calls and
// their results. Claude Code writes one record per content block, several
// sharing a message id, and may write a record again; each block is reported
// once. A tool result in the transcript is also the durable proof that a
// question was answered.
package transcript

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver/claudecode"
)

// ReadTo says the follower has read every complete record before byte
// Offset: where a later follower starts to show only what came after. A
// record half written at the end is not counted, so it is read whole, once,
// by whichever follower sees its end. Only a follower started with
// Positions reports it (after the updates it read, and once at the start).
type ReadTo struct{ Offset int64 }

// EventType makes ReadTo a chat.Payload for the emit callback.
func (ReadTo) EventType() string { return "transcript_read_to" }

// TurnEnd is what a turn_duration record says: the turn is over. It is not a
// payload for the person; a driver without hooks ends the turn on it.
type TurnEnd struct{}

// EventType makes TurnEnd a chat.Payload for the emit callback.
func (TurnEnd) EventType() string { return "transcript_turn_end" }

type record struct {
	Type        string             `json:"type"`
	Subtype     string             `json:"subtype"`
	Timestamp   string             `json:"timestamp"`
	UUID        string             `json:"uuid"`
	IsSidechain bool               `json:"isSidechain"`
	IsMeta      bool               `json:"isMeta"`
	SessionID   string             `json:"sessionId"`
	Message     claudecode.Message `json:"message"`
}

// Parser turns transcript lines into updates, remembering what it has seen.
type Parser struct {
	seen     map[string]bool
	results  map[string]bool // tool_use ids with a tool result
	toolName map[string]string
	// since, when set, makes records stamped before it history: remembered,
	// never emitted, wherever they sit in the file.
	since time.Time
	// prompts: the person's own prompts are updates too (chat.UserMessage,
	// the record's uuid its id), for a session parley did not send them to.
	prompts bool
	// open are the tool calls without a result yet, oldest first.
	open []chat.ToolCall
	// gemini: the lines are a Gemini CLI chat's (gemini.go); said is the
	// text of each of its messages reported so far, by message id.
	gemini bool
	said   map[string]string
}

// NewParser returns an empty parser.
func NewParser() *Parser {
	return &Parser{seen: map[string]bool{}, results: map[string]bool{}, toolName: map[string]string{}}
}

// Answered reports whether the transcript holds a tool result for toolUseID.
func (p *Parser) Answered(toolUseID string) bool { return p.results[toolUseID] }

// Unanswered returns the oldest tool call the transcript holds no result
// for, and the tool's name: the call a permission prompt shown now is about.
func (p *Parser) Unanswered() (chat.ToolCall, string, bool) {
	if len(p.open) == 0 {
		return chat.ToolCall{}, "", false
	}
	return p.open[0], p.toolName[p.open[0].ToolCallID], true
}

// ToolName returns the tool a tool_use id called.
func (p *Parser) ToolName(toolUseID string) string { return p.toolName[toolUseID] }

// Line parses one JSONL line and returns the new updates it carries.
func (p *Parser) Line(line []byte) ([]chat.Payload, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	if p.gemini {
		return p.geminiLine(line)
	}
	var r record
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	if (r.Type == "assistant" || r.Type == "user") && len(r.Message.Content) > 0 && r.Message.Content[0] == '[' && r.Message.Blocks() == nil {
		return nil, fmt.Errorf("transcript: content is not blocks: %.80s", r.Message.Content)
	}
	out := p.record(&r)
	if !p.since.IsZero() && r.Timestamp != "" {
		if at, err := time.Parse(time.RFC3339Nano, r.Timestamp); err == nil && at.Before(p.since) {
			return nil, nil // history: remembered above, not news
		}
	}
	return out, nil
}

// record turns one record into updates, remembering it.
func (p *Parser) record(r *record) []chat.Payload {
	if r.Type == "system" && r.Subtype == "turn_duration" && !r.IsSidechain {
		// Once per record: a file read again after a rewrite must not end
		// the turn in progress with an old turn's end.
		if r.UUID != "" && !p.once("turn", r.UUID) {
			return nil
		}
		return []chat.Payload{TurnEnd{}}
	}
	if r.IsSidechain || r.IsMeta || (r.Type != "assistant" && r.Type != "user") {
		return nil
	}
	blocks := r.Message.Blocks()
	var out []chat.Payload
	if r.Type == "user" && p.prompts && r.UUID != "" {
		if text := claudecode.PromptText(&r.Message); text != "" && p.once("prompt", r.UUID) {
			out = append(out, chat.UserMessage{MessageID: r.UUID, Text: text})
		}
	}
	for _, b := range blocks {
		switch {
		case r.Type == "assistant" && b.Type == "text" && strings.TrimSpace(b.Text) != "":
			if p.once(r.Message.ID, "text", b.Text) {
				out = append(out, chat.AgentChunk{Text: b.Text, MessageID: r.Message.ID})
			}
		case r.Type == "assistant" && b.Type == "thinking" && b.Thinking != "":
			if p.once(r.Message.ID, "thinking", b.Thinking) {
				out = append(out, chat.ThoughtChunk{Text: b.Thinking})
			}
		case r.Type == "assistant" && b.Type == "tool_use":
			p.toolName[b.ID] = b.Name
			if p.once(r.Message.ID, "tool_use", b.ID) {
				tc := claudecode.ToolCall(b)
				if !p.results[b.ID] {
					p.open = append(p.open, tc)
				}
				out = append(out, tc)
			}
		case r.Type == "user" && b.Type == "tool_result":
			p.results[b.ToolUseID] = true
			p.open = slices.DeleteFunc(p.open, func(tc chat.ToolCall) bool { return tc.ToolCallID == b.ToolUseID })
			if p.once("result", b.ToolUseID, "") {
				status := "completed"
				if b.IsError {
					status = "failed"
				}
				out = append(out, chat.ToolCallUpdate{ToolCallID: b.ToolUseID, Status: status, Output: b.ResultText()})
			}
		}
	}
	return out
}

func (p *Parser) once(parts ...string) bool {
	h := sha256.New()
	for _, s := range parts {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	k := hex.EncodeToString(h.Sum(nil)[:12])
	if p.seen[k] {
		return false
	}
	p.seen[k] = true
	return true
}

// Follower follows one transcript file with fsnotify and hands each new update
// to emit, in file order, from one goroutine.
type Follower struct {
	path    string
	parser  *Parser
	emit    func(chat.Payload)
	log     *slog.Logger
	watcher *fsnotify.Watcher
	done    chan struct{}

	// Lock order (docs/locks.md): readMu, then mu; mu is a leaf.
	readMu  sync.Mutex // one reader at a time, so updates keep file order
	mu      sync.Mutex // guards parser, off, partial, tail
	off     int64
	partial []byte
	// oversize: the line being read is over MaxRecord; it is skipped.
	oversize bool
	// tail is the file's last bytes before off: when they are not there any
	// more, Claude Code has rewritten the file (it does, in another order,
	// when it first saves a session) and it is read again from the start.
	tail []byte
	// positions: ReadTo is emitted after each read that moved reported.
	positions bool
	reported  int64 // the last ReadTo's offset; -1 before the first
}

// tailSize is how much of the file before off proves it was not rewritten.
const tailSize = 256

// SkipAll as Follow's skip: what the file holds now is only remembered.
const SkipAll = -1

// Follow starts following path (which may not exist yet). The first skip bytes
// (SkipAll: all there are now) are only remembered (answered questions, seen
// blocks), not emitted: for a session whose history is already shown. Records
// stamped before since (when set) are history too, wherever they sit.
func Follow(path string, skip int64, since time.Time, emit func(chat.Payload), logger *slog.Logger) (*Follower, error) {
	return follow(path, skip, since, false, false, emit, logger)
}

// FollowPrompts is Follow that reports the person's own prompts too
// (chat.UserMessage): for a session a person types into elsewhere.
func FollowPrompts(path string, skip int64, since time.Time, emit func(chat.Payload), logger *slog.Logger) (*Follower, error) {
	return follow(path, skip, since, true, false, emit, logger)
}

// FollowPositions is FollowPrompts that also reports, as ReadTo, how far it
// has read whole records: for a follower whose place must outlive it.
func FollowPositions(path string, skip int64, emit func(chat.Payload), logger *slog.Logger) (*Follower, error) {
	return follow(path, skip, time.Time{}, true, true, emit, logger)
}

// FollowPlaces is Follow that reports ReadTo as FollowPositions does: for a
// session parley types into (an adopted pane), whose prompts it shows itself.
func FollowPlaces(path string, skip int64, emit func(chat.Payload), logger *slog.Logger) (*Follower, error) {
	return follow(path, skip, time.Time{}, false, true, emit, logger)
}

func follow(path string, skip int64, since time.Time, prompts, positions bool, emit func(chat.Payload), logger *slog.Logger) (*Follower, error) {
	p := NewParser()
	p.since, p.prompts = since, prompts
	return followWith(path, skip, p, positions, emit, logger)
}

// followWith follows path with parser p (a Claude Code transcript's, or a
// Gemini CLI chat's); positions: report ReadTo.
func followWith(path string, skip int64, p *Parser, positions bool, emit func(chat.Payload), logger *slog.Logger) (*Follower, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("transcript: watch: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		w.Close()
		return nil, fmt.Errorf("transcript: %w", err)
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, fmt.Errorf("transcript: watch %s: %w", dir, err)
	}
	f := &Follower{path: path, parser: p, emit: emit, log: logger, watcher: w, done: make(chan struct{}),
		positions: positions, reported: -1}
	switch {
	case skip == SkipAll:
		f.read(-1, nil)
	case skip > 0:
		f.read(skip, nil)
	}
	f.reported = -1 // the first read says where it starts, even with nothing new
	f.read(-1, emit)
	go f.loop()
	return f, nil
}

// Answered reports whether a tool result for toolUseID has been read.
func (f *Follower) Answered(toolUseID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.parser.Answered(toolUseID)
}

// Unanswered is Parser.Unanswered of what has been read.
func (f *Follower) Unanswered() (chat.ToolCall, string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.parser.Unanswered()
}

// Sync reads whatever is new now (besides the events).
func (f *Follower) Sync() { f.read(-1, f.emit) }

func (f *Follower) loop() {
	defer close(f.done)
	for {
		select {
		case ev, ok := <-f.watcher.Events:
			if !ok {
				return
			}
			if filepath.Clean(ev.Name) == filepath.Clean(f.path) && ev.Op&(fsnotify.Write|fsnotify.Create) != 0 {
				f.read(-1, f.emit)
			}
		case err, ok := <-f.watcher.Errors:
			if !ok {
				return
			}
			f.log.Debug("transcript: watch error", "err", err)
		}
	}
}

// readChunk is how much of the file one read takes: a huge file is read in
// pieces, never whole.
const readChunk = 1 << 20

// MaxRecord bounds one record (line): a longer one is skipped, with a
// warning, rather than held in memory.
const MaxRecord = 32 << 20

// read reads up to limit bytes from where it stopped (-1: all); emit nil
// only remembers what it reads.
func (f *Follower) read(limit int64, emit func(chat.Payload)) {
	f.readMu.Lock()
	defer f.readMu.Unlock()
	f.mu.Lock()
	var out []chat.Payload
	func() {
		fh, err := os.Open(f.path)
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if err != nil {
			f.log.Debug("transcript: open", "err", err)
			return
		}
		defer fh.Close()
		if f.rewritten(fh) {
			f.log.Info("transcript rewritten: reading it again", "path", f.path)
			f.off, f.partial, f.tail, f.oversize = 0, nil, nil, false
		}
		if _, err := fh.Seek(f.off, io.SeekStart); err != nil {
			return
		}
		buf := make([]byte, readChunk)
		for limit < 0 || f.off < limit {
			b := buf
			if limit >= 0 && int64(len(b)) > limit-f.off {
				b = b[:limit-f.off]
			}
			n, err := fh.Read(b)
			if n > 0 {
				b = b[:n]
				f.off += int64(n)
				tail := append(f.tail, b[max(0, n-tailSize):]...)
				f.tail = append([]byte(nil), tail[max(0, len(tail)-tailSize):]...)
				ps := f.lines(b)
				if emit != nil {
					out = append(out, ps...)
				}
			}
			if err != nil {
				break // io.EOF: all there is, for now
			}
		}
		if at := f.off - int64(len(f.partial)); emit != nil && f.positions && at != f.reported {
			out = append(out, ReadTo{Offset: at})
			f.reported = at
		}
	}()
	f.mu.Unlock()
	// Emitting outside mu: the sink may ask Answered.
	for _, p := range out {
		emit(p)
	}
}

// lines parses the whole lines of b (after what an earlier read left
// unfinished) and keeps the rest for the next read. A line longer than
// MaxRecord is skipped whole. Called with mu held.
func (f *Follower) lines(b []byte) []chat.Payload {
	var out []chat.Payload
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if !f.oversize && len(f.partial)+len(b) > MaxRecord {
				f.log.Warn("transcript: a record over the limit: skipped", "path", f.path, "limit_bytes", MaxRecord)
				f.oversize, f.partial = true, nil
			}
			if !f.oversize {
				f.partial = append(f.partial, b...)
			}
			break
		}
		line := b[:i]
		if len(f.partial) > 0 {
			line = append(f.partial, line...)
		}
		if f.oversize {
			f.oversize = false // its end: the next line is read again
		} else {
			ps, err := f.parser.Line(line)
			if err != nil {
				f.log.Debug("transcript: unreadable line", "err", err)
			}
			out = append(out, ps...)
		}
		f.partial = nil
		b = b[i+1:]
	}
	return out
}

// rewritten reports whether the bytes before off are no longer what was read.
func (f *Follower) rewritten(fh *os.File) bool {
	if f.off == 0 || len(f.tail) == 0 {
		return false
	}
	got := make([]byte, len(f.tail))
	n, _ := fh.ReadAt(got, f.off-int64(len(f.tail)))
	return n != len(got) || !bytes.Equal(got, f.tail)
}

// Close stops following.
func (f *Follower) Close() error {
	err := f.watcher.Close()
	<-f.done
	return err
}

// FindByPrompt finds, among the transcripts in dir, the one whose newest
// person record is text, written at or after since: the evidence that this
// is the session a prompt just went to (never "the newest file"). It returns
// the path and the time the record is stamped with: what the session wrote
// from then on is the reply (Follow with it as since), wherever it sits in the
// file, for Claude Code may write a session's first save out of order.
func FindByPrompt(dir, text string, since time.Time) (string, time.Time, bool) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return "", time.Time{}, false
	}
	want := strings.TrimSpace(text)
	best, bestAt := "", time.Time{}
	for _, p := range files {
		st, err := os.Stat(p)
		if err != nil || st.ModTime().Before(since.Add(-time.Second)) {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for line := range bytes.Lines(b) {
			if !bytes.Contains(line, []byte(`"type":"user"`)) {
				continue
			}
			var r record
			if json.Unmarshal(line, &r) != nil || r.Type != "user" || r.IsSidechain {
				continue
			}
			if !holdsPrompt(&r.Message, want) {
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, r.Timestamp)
			if err != nil || at.Before(since.Add(-time.Second)) {
				continue
			}
			if at.After(bestAt) {
				best, bestAt = p, at
			}
		}
	}
	return best, bestAt, best != ""
}

// holdsPrompt reports whether a user record's content is the prompt: a plain
// string, or (as Claude Code writes a prompt with attachments beside it) a
// text block.
func holdsPrompt(m *claudecode.Message, want string) bool {
	var content string
	if json.Unmarshal(m.Content, &content) == nil {
		return strings.TrimSpace(content) == want
	}
	for _, b := range m.Blocks() {
		if b.Type == "text" && strings.TrimSpace(b.Text) == want {
			return true
		}
	}
	return false
}

// ProjectDir is where Claude Code keeps the transcripts of sessions in cwd:
// every character of the path that is not a letter or digit becomes "-".
func ProjectDir(configDir, cwd string) string {
	var b strings.Builder
	for _, r := range cwd {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return filepath.Join(configDir, "projects", b.String())
}
