package wikisearch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/grpo-dev/grpo/env"
)

// wikiPage is one page of a wiki-search corpus: verifiers' rare-wiki-pages
// rows (id, title, Markdown content whose '#' lines start sections).
type wikiPage struct {
	ID, Title, Content string
}

// wikiCorpus is the pages, by id and in id order.
type wikiCorpus struct {
	pages []wikiPage
	byID  map[string]int
}

// loadWikiCorpus reads a corpus directory: each NAME.md is the page NAME
// (its title the first '# ' heading, else NAME), and each *.jsonl holds
// rows {"id", "title", "content"} as the Lab's HF dataset does.
func loadWikiCorpus(fsys fs.FS) (*wikiCorpus, error) {
	var pages []wikiPage
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir // our index cache, VCS dirs
			}
			return nil
		}
		switch path.Ext(p) {
		case ".md":
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			id := strings.TrimSuffix(path.Base(p), ".md")
			pages = append(pages, wikiPage{ID: id, Title: markdownTitle(string(data), id), Content: string(data)})
		case ".jsonl":
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			rows, err := wikiRows(p, data)
			if err != nil {
				return err
			}
			pages = append(pages, rows...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return newWikiCorpus(pages)
}

func markdownTitle(content, id string) string {
	for _, line := range strings.Split(content, "\n") {
		if t, ok := strings.CutPrefix(line, "# "); ok && strings.TrimSpace(t) != "" {
			return strings.TrimSpace(t)
		}
	}
	return id
}

func wikiRows(name string, data []byte) ([]wikiPage, error) {
	var pages []wikiPage
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var r struct{ ID, Title, Content string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("%s line %d: %v", name, i+1, err)
		}
		pages = append(pages, wikiPage{ID: r.ID, Title: r.Title, Content: r.Content})
	}
	return pages, nil
}

// wikiRowsOf reads pages from dataset rows (the hub's parquet files).
func wikiRowsOf(rows []env.Row) ([]wikiPage, error) {
	pages := make([]wikiPage, 0, len(rows))
	for i, r := range rows {
		var p wikiPage
		var err error
		for _, f := range []struct {
			dst  *string
			name string
		}{{&p.ID, "id"}, {&p.Title, "title"}, {&p.Content, "content"}} {
			if *f.dst, err = env.TextField(r, f.name); err != nil {
				return nil, fmt.Errorf("corpus row %d: %v", i, err)
			}
		}
		pages = append(pages, p)
	}
	return pages, nil
}

func newWikiCorpus(pages []wikiPage) (*wikiCorpus, error) {
	if len(pages) == 0 {
		return nil, fmt.Errorf("the corpus has no pages (give NAME.md files or .jsonl rows with id, title, content)")
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i].ID < pages[j].ID })
	c := &wikiCorpus{pages: pages, byID: map[string]int{}}
	for i, p := range pages {
		switch {
		case p.ID == "" || strings.Contains(p.ID, ":"):
			return nil, fmt.Errorf("page %q: an id must be non-empty and without ':' (section ids are page_id:section)", p.ID)
		case strings.TrimSpace(p.Title) == "":
			return nil, fmt.Errorf("page %q has an empty title", p.ID)
		}
		if _, dup := c.byID[p.ID]; dup {
			return nil, fmt.Errorf("page id %q appears twice", p.ID)
		}
		c.byID[p.ID] = i
	}
	return c, nil
}

// fingerprint identifies the corpus's content, so a cached index built
// from other pages is never used.
func (c *wikiCorpus) fingerprint() string {
	h := sha256.New()
	for _, p := range c.pages {
		for _, s := range []string{p.ID, p.Title, p.Content} {
			fmt.Fprintf(h, "%d:%s", len(s), s)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func (c *wikiCorpus) page(id string) (wikiPage, error) {
	i, ok := c.byID[id]
	if !ok {
		return wikiPage{}, fmt.Errorf("page %q not found; use a page_id from search_pages", id)
	}
	return c.pages[i], nil
}

// sectionID is verifiers' normalize_id: lower case, spaces as '_'.
func sectionID(name string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), " ", "_")
}

// wikiSection is a heading line of a page.
type wikiSection struct {
	ID, Name string
	Line     int
}

// sections are a page's '#' lines, as verifiers' view_sections lists
// them; a page without headings is one section, "full".
func (p wikiPage) sections() []wikiSection {
	var out []wikiSection
	for i, line := range strings.Split(p.Content, "\n") {
		if strings.HasPrefix(line, "#") {
			name := strings.TrimSpace(strings.TrimLeft(line, "#"))
			out = append(out, wikiSection{ID: p.ID + ":" + sectionID(name), Name: name, Line: i})
		}
	}
	if len(out) == 0 {
		out = append(out, wikiSection{ID: p.ID + ":full", Name: "Full Page"})
	}
	return out
}

// readSection is verifiers' read_section: from the first heading whose
// id matches to the next heading; "full" is the whole page.
func (c *wikiCorpus) readSection(id string) (string, error) {
	pageID, name, ok := strings.Cut(id, ":")
	if !ok {
		return "", fmt.Errorf("Invalid section_id format. Expected: page_id:section_name")
	}
	p, err := c.page(pageID)
	if err != nil {
		return "", err
	}
	if name == "full" {
		return p.Content, nil
	}
	lines := strings.Split(p.Content, "\n")
	start := -1
	for i, line := range lines {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		if start >= 0 {
			return strings.Join(lines[start:i], "\n"), nil
		}
		if sectionID(strings.TrimLeft(line, "#")) == name {
			start = i
		}
	}
	if start >= 0 {
		return strings.Join(lines[start:], "\n"), nil
	}
	return "", fmt.Errorf("Section not found: %s", id)
}
