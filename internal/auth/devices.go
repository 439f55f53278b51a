package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// SessionsFile in the data directory holds the devices and their sessions, hashed.
const SessionsFile = "sessions.json"

const (
	// CodeTTL is how long a login or pairing code (the link parley prints) is good for.
	CodeTTL = 5 * time.Minute
	// SessionTTL is how long a device's session lasts unused; each use slides it.
	SessionTTL = 30 * 24 * time.Hour
	// slideEvery bounds the file's writes: a session's expiry (and its device's
	// last-seen time on disk) moves at most once in this time.
	slideEvery = time.Hour
	// MaxDeviceName bounds a device's name, in bytes.
	MaxDeviceName = 64
)

// Device kinds.
const (
	KindBrowser = "browser" // signed in through a link or the sign-in form: a cookie
	KindProgram = "program" // paired with POST /api/pair: a bearer token of its own
)

// Device is one signed-in browser or program: each sign-in is a device with its
// own session, so one can be ended (revoked) without touching the others. The
// shared token (auth.go) is no device: it stays for the CLI and scripts.
type Device struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Kind     string    `json:"kind"`
	PairedAt time.Time `json:"paired_at"`
	LastSeen time.Time `json:"last_seen"`

	hash    string    // SHA-256 of the session's secret (cookie or token)
	expires time.Time // slides with use
}

// stored is a device as SessionsFile keeps it.
type stored struct {
	Device
	Hash    string    `json:"hash"`
	Expires time.Time `json:"expires"`
}

// pending is an unspent code: a login code has no name, a pairing code names
// the device it will sign in.
type pending struct {
	expires time.Time
	name    string
	by      string // the device that minted it, "" for the shared token
}

// MaxCodesPerDevice bounds a device's unspent codes: a stolen device token
// cannot stock codes to sign in after the device is revoked (revoking deletes
// them too), nor fill memory.
const MaxCodesPerDevice = 10

// ErrTooManyCodes refuses a code while its device holds MaxCodesPerDevice unspent.
var ErrTooManyCodes = errors.New("auth: this device holds " + strconv.Itoa(MaxCodesPerDevice) + " unused codes: use one or wait until they expire")

// Devices are the devices' sign-ins: one-time login and pairing codes,
// exchanged for a device whose session secret lives in an HttpOnly cookie (a
// browser) or is handed to a program once. The long-lived token never reaches
// a browser's storage.
//
// Codes are kept in memory only: a restart forgets every code, so a used code
// can never be used again and an unused one simply expires (`parley
// login-link` or `parley pair` prints a fresh one). Devices are kept in
// SessionsFile (0600) with a SHA-256 hash of their secret and its expiry, so a
// device stays signed in across restarts and a copy of the file signs nobody in.
type Devices struct {
	path string
	now  func() time.Time

	mu      sync.Mutex         // a leaf (docs/locks.md)
	codes   map[string]pending // code hash → code
	devices map[string]*Device // id → device
	byHash  map[string]*Device // secret hash → device
}

// OpenDevices loads dataDir's devices, dropping expired ones. With dataDir ""
// sessions live in memory only.
func OpenDevices(dataDir string) (*Devices, error) {
	s := &Devices{now: time.Now, codes: map[string]pending{}, devices: map[string]*Device{}, byHash: map[string]*Device{}}
	if dataDir == "" {
		return s, nil
	}
	s.path = filepath.Join(dataDir, SessionsFile)
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("auth: sessions: %w", err)
	}
	var f struct {
		Devices []stored `json:"devices"`
		// Sessions is the file of versions before devices: hash → expiry.
		Sessions map[string]time.Time `json:"sessions"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("auth: %s is not a sessions file (delete it to sign every device out): %w", s.path, err)
	}
	now := s.now()
	for h, exp := range f.Sessions {
		if len(h) < 12 { // not a hash this version wrote: nobody's secret matches it
			continue
		}
		f.Devices = append(f.Devices, stored{Device: Device{ID: "d-" + h[:12], Name: "browser", Kind: KindBrowser}, Hash: h, Expires: exp})
	}
	for _, st := range f.Devices {
		if st.Expires.After(now) && st.Hash != "" && st.ID != "" {
			d := st.Device
			d.hash, d.expires = st.Hash, st.Expires
			s.devices[d.ID], s.byHash[d.hash] = &d, &d
		}
	}
	return s, nil
}

func hash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

func random(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("auth: random: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// CleanName makes a person's device name safe to keep and show: trimmed, valid
// UTF-8, no control characters, at most MaxDeviceName bytes; "" stays "".
func CleanName(name string) string {
	name = strings.ToValidUTF8(name, "")
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	for len(name) > MaxDeviceName {
		_, n := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-n]
	}
	return name
}

// NewCode makes a login code good for one use within CodeTTL, minted by
// device by ("" for the shared token).
func (s *Devices) NewCode(by string) (code string, expires time.Time, err error) {
	return s.newCode(by, "")
}

// NewPairCode makes a pairing code good for one use within CodeTTL: it signs
// in a device called name. by is the minting device, as for NewCode.
func (s *Devices) NewPairCode(by, name string) (code string, expires time.Time, err error) {
	name = CleanName(name)
	if name == "" {
		name = "phone"
	}
	return s.newCode(by, name)
}

func (s *Devices) newCode(by, name string) (code string, expires time.Time, err error) {
	code, err = random(16)
	if err != nil {
		return "", time.Time{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	held := 0
	for h, p := range s.codes {
		if !p.expires.After(now) {
			delete(s.codes, h)
		} else if by != "" && p.by == by {
			held++
		}
	}
	if held >= MaxCodesPerDevice {
		return "", time.Time{}, ErrTooManyCodes
	}
	if by != "" {
		if _, ok := s.devices[by]; !ok { // revoked while the request ran
			return "", time.Time{}, fmt.Errorf("auth: no device %s", by)
		}
	}
	expires = now.Add(CodeTTL)
	s.codes[hash(code)] = pending{expires: expires, name: name, by: by}
	return code, expires, nil
}

// UseCode spends a login or pairing code: ok once, within its time. name is
// the device name a pairing code carries ("" for a login code).
func (s *Devices) UseCode(code string) (name string, ok bool) {
	if code == "" {
		return "", false
	}
	h := hash(code)
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.codes[h]
	delete(s.codes, h)
	return p.name, ok && p.expires.After(s.now())
}

// Create signs a new device in and returns its session secret (a cookie's
// value, or a program's token), shown this once.
func (s *Devices) Create(name, kind string) (secret string, dev Device, err error) {
	secret, err = random(32)
	if err != nil {
		return "", Device{}, err
	}
	id, err := random(8)
	if err != nil {
		return "", Device{}, err
	}
	if name = CleanName(name); name == "" {
		name = kind
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().UTC()
	d := &Device{ID: "d-" + id, Name: name, Kind: kind, PairedAt: now, LastSeen: now, hash: hash(secret), expires: now.Add(SessionTTL)}
	s.devices[d.ID], s.byHash[d.hash] = d, d
	return secret, *d, s.saveLocked()
}

// Lookup finds the device whose session secret is secret, sliding its expiry
// and noting it was seen.
func (s *Devices) Lookup(secret string) (Device, bool) {
	if secret == "" {
		return Device{}, false
	}
	h := hash(secret)
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.byHash[h]
	if !ok {
		return Device{}, false
	}
	now := s.now()
	if !d.expires.After(now) {
		s.removeLocked(d)
		return Device{}, false
	}
	d.LastSeen = now.UTC()
	if next := now.Add(SessionTTL); next.Sub(d.expires) >= slideEvery {
		d.expires = next
		_ = s.saveLocked() // a failed write only shortens the session
	}
	return *d, true
}

// Valid reports whether secret is a live session.
func (s *Devices) Valid(secret string) bool {
	_, ok := s.Lookup(secret)
	return ok
}

// Revoke ends the device whose session secret is secret (sign-out).
func (s *Devices) Revoke(secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.byHash[hash(secret)]
	if !ok {
		return nil
	}
	s.removeLocked(d)
	return s.saveLocked()
}

// RevokeDevice ends a device by its id: its session stops working at once.
// found is false for an unknown device.
func (s *Devices) RevokeDevice(id string) (found bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[id]
	if !ok {
		return false, nil
	}
	s.removeLocked(d)
	return true, s.saveLocked()
}

// Live reports whether device id is signed in: not revoked, signed out or expired.
func (s *Devices) Live(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[id]
	return ok && d.expires.After(s.now())
}

// List lists the live devices, the oldest pairing first.
func (s *Devices) List() []Device {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	out := make([]Device, 0, len(s.devices))
	for _, d := range s.devices {
		if d.expires.After(now) {
			out = append(out, *d)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].PairedAt.Equal(out[j].PairedAt) {
			return out[i].PairedAt.Before(out[j].PairedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// removeLocked ends d and deletes the codes it minted: they sign nobody in.
func (s *Devices) removeLocked(d *Device) {
	delete(s.devices, d.ID)
	delete(s.byHash, d.hash)
	for h, p := range s.codes {
		if p.by == d.ID {
			delete(s.codes, h)
		}
	}
}

// saveLocked writes the sessions file whole (write, then rename), mode 0600.
func (s *Devices) saveLocked() error {
	if s.path == "" {
		return nil
	}
	now := s.now()
	live := make([]stored, 0, len(s.devices))
	for _, d := range s.devices {
		if d.expires.After(now) {
			live = append(live, stored{Device: *d, Hash: d.hash, Expires: d.expires})
		}
	}
	sort.Slice(live, func(i, j int) bool { return live[i].ID < live[j].ID })
	b, err := json.Marshal(map[string]any{"devices": live})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".sessions-*")
	if err != nil {
		return fmt.Errorf("auth: sessions: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("auth: sessions: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("auth: sessions: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("auth: sessions: %w", err)
	}
	return nil
}

// SetClock replaces the clock, before any use: tests of codes expiring over
// HTTP move it instead of waiting minutes.
func (s *Devices) SetClock(now func() time.Time) { s.now = now }
