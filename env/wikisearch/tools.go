package wikisearch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/grpo-dev/grpo/env"
)

// wikiSearchResults is how many pages search_pages returns (verifiers'
// n_results).
const wikiSearchResults = 10

// wikiTools are verifiers' three wiki-search tools over a corpus, with
// their signatures and descriptions; results are written as Python's
// str() writes the lists and dicts verifiers' tools return, which is what
// a model trained on the Lab's environment reads.
func wikiTools(c *wikiCorpus, rank func(ctx context.Context, query string, k int) ([]int, error)) []env.Tool {
	str := func(name, desc string) string {
		return fmt.Sprintf(`{"type": "object", "properties": {%q: {"type": "string", "description": %q}}, "required": [%q], "additionalProperties": false}`, name, desc, name)
	}
	arg := func(args json.RawMessage, name string) string {
		var m map[string]string
		_ = json.Unmarshal(args, &m) // the schema check ran before
		return m[name]
	}
	search, _ := env.NewFuncTool("search_pages", "Search for top 10 relevant articles using title embedding similarity.", str("query", "The query to search for."),
		func(ctx context.Context, args json.RawMessage) (string, error) {
			q := arg(args, "query")
			docs, err := rank(ctx, q, wikiSearchResults)
			if err != nil {
				return "", err
			}
			if len(docs) == 0 {
				return "", fmt.Errorf("No results found for query: %s", q)
			}
			rows := make([][][2]string, len(docs))
			for i, d := range docs {
				rows[i] = [][2]string{{"page_id", c.pages[d].ID}, {"title", c.pages[d].Title}}
			}
			return pyDicts(rows), nil
		})
	view, _ := env.NewFuncTool("view_sections", "View the sections of a page.", str("page_id", "The ID of the page to view."),
		func(_ context.Context, args json.RawMessage) (string, error) {
			p, err := c.page(arg(args, "page_id"))
			if err != nil {
				return "", err
			}
			var rows [][][2]string
			for _, s := range p.sections() {
				rows = append(rows, [][2]string{{"section_id", s.ID}, {"section_name", s.Name}})
			}
			return pyDicts(rows), nil
		})
	read, _ := env.NewFuncTool("read_section", "Read a section of a page.", str("section_id", "The ID of the section to read."),
		func(_ context.Context, args json.RawMessage) (string, error) {
			return c.readSection(arg(args, "section_id"))
		})
	return []env.Tool{search, view, read}
}

// pyDicts writes a list of string-valued dicts as Python's str() does:
// [{'page_id': 'x', 'title': 'X'}, ...].
func pyDicts(rows [][][2]string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, row := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('{')
		for j, kv := range row {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pyRepr(kv[0]) + ": " + pyRepr(kv[1]))
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.String()
}

// pyRepr is Python 3's repr of a str: single quotes unless the text has a
// single quote and no double quote; backslash escapes for the quote, the
// backslash, \n \r \t and other non-printable characters.
func pyRepr(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == unicode.ReplacementChar || unicode.IsPrint(r) || r == ' ':
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(q)
	return b.String()
}
