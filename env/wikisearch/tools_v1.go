package wikisearch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/grpo-dev/grpo/env"
)

// v1's tools: verifiers a60a606's WikiSearchToolset (servers/wiki.py), an
// MCP server with TOOL_PREFIX "wiki", so the model calls wiki_search_pages,
// wiki_view_sections and wiki_read_section. Their descriptions are the
// methods' docstrings (stripped, as Python 3.11/3.12 keep them) and their
// parameters FastMCP's schema of the signature. Replies are what the
// harness puts in the tool message: FastMCP turns a list into one text
// block per item, each item as pydantic's JSON with indent 2, "[]" for an
// empty list, and a raised error into "Error executing tool NAME: ERROR"
// (NAME unprefixed); the blocks are joined with "\n". "Section not found"
// is an ordinary reply there. Ranking is grpo's (BM25, or an embeddings
// endpoint) instead of ChromaDB's local MiniLM.

const (
	searchDescV1 = "Search the wiki for the 10 most relevant pages (by title). Returns\n        `[{page_id, title}, ...]` \u2014 pass a page_id to view_sections."
	viewDescV1   = "List a page's sections. Returns `[{section_id, section_name}, ...]` \u2014 pass a\n        section_id to read_section."
	readDescV1   = "Read the text of a section (`page_id:section`; use `page_id:full` for all)."
)

func wikiToolsV1(c *wikiCorpus, rank func(ctx context.Context, query string, k int) ([]int, error)) []env.Tool {
	schema := func(tool, param string) string {
		words := strings.Split(param, "_") // pydantic's field title: "page_id" -> "Page Id"
		for i, w := range words {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
		title := strings.Join(words, " ")
		return fmt.Sprintf(`{"properties": {%q: {"title": %q, "type": "string"}}, "required": [%q], "title": "%sArguments", "type": "object"}`, param, title, param, tool)
	}
	arg := func(args json.RawMessage, name string) string {
		var m map[string]string
		_ = json.Unmarshal(args, &m) // the schema check ran before
		return m[name]
	}
	search, _ := env.NewFuncTool("wiki_search_pages", searchDescV1, schema("search_pages", "query"),
		func(ctx context.Context, args json.RawMessage) (string, error) {
			docs, err := rank(ctx, arg(args, "query"), wikiSearchResults)
			if err != nil {
				return "", err
			}
			items := make([][][2]string, len(docs))
			for i, d := range docs {
				items[i] = [][2]string{{"page_id", c.pages[d].ID}, {"title", c.pages[d].Title}}
			}
			return mcpItems(items), nil
		})
	view, _ := env.NewFuncTool("wiki_view_sections", viewDescV1, schema("view_sections", "page_id"),
		func(_ context.Context, args json.RawMessage) (string, error) {
			id := arg(args, "page_id")
			i, ok := c.byID[id]
			if !ok {
				return "", mcpError("view_sections", pyRepr(id)) // KeyError(page_id)
			}
			var items [][][2]string
			for _, s := range c.pages[i].sections() {
				items = append(items, [][2]string{{"section_id", s.ID}, {"section_name", s.Name}})
			}
			return mcpItems(items), nil
		})
	read, _ := env.NewFuncTool("wiki_read_section", readDescV1, schema("read_section", "section_id"),
		func(_ context.Context, args json.RawMessage) (string, error) {
			return readSectionV1(c, arg(args, "section_id"))
		})
	return []env.Tool{search, view, read}
}

// readSectionV1 is v1's read_section: v0's reading, its failures as
// Python raises them and a missing section as a reply.
func readSectionV1(c *wikiCorpus, id string) (string, error) {
	pageID, _, ok := strings.Cut(id, ":")
	if !ok {
		return "", mcpError("read_section", "not enough values to unpack (expected 2, got 1)")
	}
	if _, ok := c.byID[pageID]; !ok {
		return "", mcpError("read_section", pyRepr(pageID))
	}
	text, err := c.readSection(id)
	if err != nil {
		return "Section not found: " + id, nil
	}
	return text, nil
}

// mcpError is FastMCP's text for a tool that raised; grpo counts it as a
// tool error and shows the model the same text.
func mcpError(tool, err string) error {
	return fmt.Errorf("Error executing tool %s: %s", tool, err)
}

// mcpItems writes a list of string-valued dicts as the harness shows
// FastMCP's blocks: each dict as JSON with indent 2, joined by "\n".
func mcpItems(items [][][2]string) string {
	if len(items) == 0 {
		return "[]"
	}
	blocks := make([]string, len(items))
	for i, kv := range items {
		var b strings.Builder
		b.WriteString("{")
		for j, p := range kv {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n  " + pydanticJSON(p[0]) + ": " + pydanticJSON(p[1]))
		}
		b.WriteString("\n}")
		blocks[i] = b.String()
	}
	return strings.Join(blocks, "\n")
}

// pydanticJSON is a JSON string as pydantic_core writes it: UTF-8 as is;
// '"', '\\' and control characters escaped (\b \f \n \r \t, else \u00xx).
func pydanticJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
