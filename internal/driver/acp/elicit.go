package acp

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/chat"
)

// A form elicitation becomes a question card when every field is a choice
// (enum, oneOf, an array of choices, a boolean) or plain text or a number.
// Anything else is declined: parley advertises only what it can show.

// field is one property of an elicitation schema, as a question.
type field struct {
	name     string
	kind     string // string, number, integer, boolean, array
	values   []string
	labels   []string // parallel to values
	descs    []string // parallel to values: the choices' own descriptions
	required bool
	item     chat.QuestionItem
	// custom names the free-text field that goes with this choice field
	// ("<name>_custom", as Claude's ACP adapter sends for AskUserQuestion's
	// "Other" box): one question, whose own words go there.
	custom string
}

// customSuffix marks a choice field's free-text companion.
const customSuffix = "_custom"

// formQuestion maps an elicitation form onto a question card, or says why not.
func formQuestion(requestID string, f *sdk.UnstableCreateElicitationForm) (chat.Question, []field, error) {
	names := make([]string, 0, len(f.RequestedSchema.Properties))
	for n := range f.RequestedSchema.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	req := map[string]bool{}
	for _, r := range f.RequestedSchema.Required {
		req[r] = true
	}
	// A choice field's free-text companion is folded into its question.
	companion := map[string]string{} // choice field → its text field
	folded := map[string]bool{}
	for _, n := range names {
		base, ok := strings.CutSuffix(n, customSuffix)
		if !ok {
			continue
		}
		bp, _ := f.RequestedSchema.Properties[base].(map[string]any)
		cp, _ := f.RequestedSchema.Properties[n].(map[string]any)
		choices := bp
		if bp["type"] == "array" {
			choices, _ = bp["items"].(map[string]any)
		}
		if v, _, _ := enumOf(choices); len(v) > 0 && cp["type"] == "string" && !req[n] {
			if cv, _, _ := enumOf(cp); len(cv) == 0 {
				companion[base], folded[n] = n, true
			}
		}
	}
	shown := len(names) - len(folded)
	q := chat.Question{RequestID: requestID}
	var fields []field
	for _, n := range names {
		if folded[n] {
			continue
		}
		prop, _ := f.RequestedSchema.Properties[n].(map[string]any)
		fd := field{name: n, required: req[n], custom: companion[n]}
		fd.kind, _ = prop["type"].(string)
		title, _ := prop["title"].(string)
		desc, _ := prop["description"].(string)
		text := title
		if text == "" {
			text = desc
		}
		if text == "" {
			text = n
		}
		if shown == 1 && f.Message != "" {
			text = f.Message
		}
		choices := prop
		if fd.kind == "array" {
			choices, _ = prop["items"].(map[string]any)
			fd.item.MultiSelect = true
		}
		fd.values, fd.labels, fd.descs = enumOf(choices)
		switch fd.kind {
		case "string", "array":
			if fd.kind == "array" && len(fd.values) == 0 {
				return chat.Question{}, nil, fmt.Errorf("field %q: an array without choices", n)
			}
		case "boolean":
			fd.values, fd.labels, fd.descs = []string{"true", "false"}, []string{"Yes", "No"}, []string{"", ""}
		case "number", "integer":
		default:
			return chat.Question{}, nil, fmt.Errorf("field %q: type %q has no question form", n, fd.kind)
		}
		fd.item.Question = text
		if text != title && title != "" {
			fd.item.Header = title
		}
		for i, l := range fd.labels {
			opt := chat.QuestionOption{Label: l, Description: fd.descs[i]}
			if opt.Description == "" && l != fd.values[i] {
				opt.Description = fd.values[i]
			}
			fd.item.Options = append(fd.item.Options, opt)
		}
		if fd.item.Options == nil {
			fd.item.Options = []chat.QuestionOption{}
		}
		if desc != "" && desc != text {
			fd.item.Header = strings.TrimSpace(fd.item.Header + " " + desc)
		}
		q.Questions = append(q.Questions, fd.item)
		fields = append(fields, fd)
	}
	if len(fields) == 0 {
		return chat.Question{}, nil, fmt.Errorf("a form with no fields")
	}
	return q, fields, nil
}

// enumOf reads a schema's choices: enum (values are labels), or oneOf/anyOf
// of {const, title, description}.
func enumOf(s map[string]any) (values, labels, descs []string) {
	if s == nil {
		return nil, nil, nil
	}
	if e, ok := s["enum"].([]any); ok {
		for _, v := range e {
			str := fmt.Sprint(v)
			values, labels, descs = append(values, str), append(labels, str), append(descs, "")
		}
		return values, labels, descs
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		list, _ := s[key].([]any)
		for _, item := range list {
			m, _ := item.(map[string]any)
			c, ok := m["const"]
			if !ok {
				continue
			}
			v := fmt.Sprint(c)
			l, _ := m["title"].(string)
			if l == "" {
				l = v
			}
			d, _ := m["description"].(string)
			values, labels, descs = append(values, v), append(labels, l), append(descs, d)
		}
	}
	return values, labels, descs
}

// formAnswer turns a question card's answers into the form's content.
func formAnswer(fields []field, a chat.Answers) (map[string]any, error) {
	content := map[string]any{}
	for _, fd := range fields {
		ans, ok := a[fd.item.Question]
		if !ok {
			if fd.required {
				return nil, fmt.Errorf("%w: %q is not answered", chat.ErrBadInput, fd.item.Question)
			}
			continue
		}
		picked := ans.Words()
		vals := make([]string, 0, len(picked))
		var own []string // the person's own words, for a field with a companion
		for _, p := range picked {
			v, ok := fd.valueOf(p)
			switch {
			case ok:
				vals = append(vals, v)
			case fd.custom != "" && strings.TrimSpace(p) != "":
				own = append(own, p)
			case fd.custom == "":
				return nil, fmt.Errorf("%w: %q is not one of the choices of %q", chat.ErrBadInput, p, fd.item.Question)
			}
		}
		if len(own) > 0 {
			content[fd.custom] = strings.Join(own, ", ")
			if len(vals) == 0 {
				continue
			}
		}
		switch fd.kind {
		case "array":
			content[fd.name] = vals
		case "boolean":
			content[fd.name] = len(vals) > 0 && vals[0] == "true"
		case "number", "integer":
			if len(vals) == 0 {
				continue
			}
			n, err := strconv.ParseFloat(strings.TrimSpace(vals[0]), 64)
			if err != nil {
				return nil, fmt.Errorf("%w: %q wants a number", chat.ErrBadInput, fd.item.Question)
			}
			content[fd.name] = n
		default:
			if len(vals) > 0 {
				content[fd.name] = vals[0]
			}
		}
	}
	return content, nil
}

// valueOf maps a chosen label (or the value itself) back to its value. A
// field with choices takes nothing else; free text passes through.
func (fd field) valueOf(label string) (string, bool) {
	for i, l := range fd.labels {
		if l == label {
			return fd.values[i], true
		}
	}
	if len(fd.values) == 0 {
		return label, true
	}
	for _, v := range fd.values {
		if v == label {
			return v, true
		}
	}
	return "", false
}
