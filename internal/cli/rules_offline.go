package cli

import (
	"context"

	"github.com/parleyhq/parley/internal/store"
)

// noStored is the stored rules of a machine that has no database yet.
type noStored struct{}

func (noStored) StoredRules(context.Context) ([]store.StoredRule, error) { return nil, nil }
func (noStored) PutRule(context.Context, store.StoredRule) error         { return nil }
func (noStored) DeleteRule(context.Context, string) error                { return nil }
