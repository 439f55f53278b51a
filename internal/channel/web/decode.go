package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/parleyhq/parley/internal/chat"
)

// DecodeJSON reads one JSON object of at most limit bytes into v, for the
// endpoints other packages add (internal/schedule, ruleset, trigger);
// unknown fields are refused by name, so a misspelt option is not silently
// lost. Its errors are chat.ErrTooLarge or chat.ErrBadInput, for WriteError.
func DecodeJSON(w http.ResponseWriter, req *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("%w: the request is larger than %d bytes", chat.ErrTooLarge, limit)
		}
		return chat.BadInput("the request is not the JSON expected: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return chat.BadInput("the request holds more than one JSON value")
	}
	return nil
}
