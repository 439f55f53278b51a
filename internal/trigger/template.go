package trigger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
)

// MaxTemplate bounds a template, in bytes.
const MaxTemplate = 16 << 10

// parseTemplate reads a template that only reads fields of the body:
// text and {{.field}} or {{.a.b}}, nothing else: no functions (not even
// text/template's own), no pipelines, no conditions, loops or variables.
// So a template never runs code, whoever wrote the body.
func parseTemplate(src string) (*template.Template, error) {
	switch {
	case strings.TrimSpace(src) == "":
		return nil, errors.New("the template is empty: say what the agent is to do, e.g. \"CI failed on {{.branch}}\"")
	case len(src) > MaxTemplate:
		return nil, fmt.Errorf("the template is %d bytes: at most %d", len(src), MaxTemplate)
	}
	t, err := template.New("template").Option("missingkey=error").Parse(src)
	if err != nil {
		return nil, fmt.Errorf("the template does not parse: %v", err)
	}
	if len(t.Templates()) != 1 {
		return nil, errors.New("the template defines templates: only text and fields of the body, as {{.branch}}")
	}
	for _, n := range t.Tree.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
		case *parse.ActionNode:
			if len(n.Pipe.Decl) != 0 || len(n.Pipe.Cmds) != 1 || len(n.Pipe.Cmds[0].Args) != 1 {
				return nil, fmt.Errorf("the template's %s: only a field of the body, as {{.branch}} or {{.pull_request.title}}", n)
			}
			if _, ok := n.Pipe.Cmds[0].Args[0].(*parse.FieldNode); !ok {
				return nil, fmt.Errorf("the template's %s: only a field of the body, as {{.branch}} or {{.pull_request.title}}", n)
			}
		default:
			return nil, fmt.Errorf("the template's %s: only text and fields of the body, as {{.branch}}", n)
		}
	}
	return t, nil
}

// fill fills a template from a JSON object: a field the body lacks is an
// error naming it, never "<no value>"; a null is empty; numbers as sent.
func fill(t *template.Template, body []byte, limit int) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var data any
	if err := dec.Decode(&data); err != nil {
		return "", fmt.Errorf("the body is not JSON: %v", err)
	}
	if dec.More() {
		return "", errors.New("the body holds more than one JSON value")
	}
	obj, ok := data.(map[string]any)
	if !ok {
		return "", errors.New("the body is not a JSON object: the template reads its fields")
	}
	var out limitedBuffer
	out.limit = limit
	if err := t.Execute(&out, dropNulls(obj)); err != nil {
		if errors.Is(err, errTooLong) {
			return "", fmt.Errorf("the filled template is longer than %d bytes", limit)
		}
		return "", fmt.Errorf("the body does not fill the template: %s", strings.TrimPrefix(err.Error(), "template: "))
	}
	if strings.TrimSpace(out.String()) == "" {
		return "", errors.New("the filled template is empty")
	}
	return out.String(), nil
}

// dropNulls makes JSON nulls empty strings, which print as nothing rather
// than text/template's "<no value>".
func dropNulls(v any) any {
	switch v := v.(type) {
	case nil:
		return ""
	case map[string]any:
		for k, e := range v {
			v[k] = dropNulls(e)
		}
	case []any:
		for i, e := range v {
			v[i] = dropNulls(e)
		}
	}
	return v
}

var errTooLong = errors.New("too long")

// limitedBuffer refuses writes past limit, so a small body cannot make a
// template write a huge text.
type limitedBuffer struct {
	bytes.Buffer
	limit int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.limit {
		return 0, errTooLong
	}
	return b.Buffer.Write(p)
}
