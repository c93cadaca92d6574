package wandb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// client speaks W&B's public HTTP API as the SDK does
// (wandb/sdk/internal/internal_api.py, file_stream.py): GraphQL at
// <base>/graphql, the run's metrics streamed to
// <base>/files/<entity>/<project>/<run>/file_stream, files uploaded to the
// URLs createRunFiles hands out. Every request but the upload to the
// signed URL carries the API key as HTTP basic auth, user "api".
type client struct {
	base, key string
	http      *http.Client
	timeout   time.Duration

	entity, project, run string
	historyLine          int // next wandb-history.jsonl line (file_stream offset)
	uploaded             []string
}

// errRefused is an answer from the server that is not a network failure:
// the key was refused, the project is not ours, the request is malformed.
type errRefused struct {
	status int
	body   string
}

func (e *errRefused) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.status, strings.TrimSpace(e.body))
}

func (c *client) do(method, u string, body []byte, auth bool, header http.Header) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if auth {
		req.SetBasicAuth("api", c.key)
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "grpo (W&B public API)")
	resp, err := c.http.Do(req)
	if err != nil {
		// The URL is in the error, the key is not (it is in a header).
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, &errRefused{resp.StatusCode, string(out)}
	}
	return out, nil
}

// graphql posts one operation and decodes data into out.
func (c *client) graphql(query string, vars map[string]any, out any) error {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	resp, err := c.do(http.MethodPost, c.base+"/graphql", body, true, nil)
	if err != nil {
		return err
	}
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		return fmt.Errorf("W&B GraphQL answer: %w", err)
	}
	if len(r.Errors) > 0 {
		return &errRefused{200, r.Errors[0].Message}
	}
	return json.Unmarshal(r.Data, out)
}

// upsertBucket creates the run (or finds it again, on resume) with its
// config: the SDK's UpsertBucket mutation (internal_api.py upsert_run),
// with the subset of its variables this trainer has; the answer says the entity (the key's default when none was set)
// and how many history lines the run already has.
const upsertBucket = `mutation UpsertBucket($name: String, $project: String, $entity: String, $groupName: String, $displayName: String, $config: JSONString, $host: String, $jobType: String, $tags: [String!]) {
  upsertBucket(input: {name: $name, modelName: $project, entityName: $entity, groupName: $groupName, displayName: $displayName, config: $config, host: $host, jobType: $jobType, tags: $tags}) {
    bucket { id name displayName historyLineCount project { name entity { name } } }
    inserted
  }
}`

func (c *client) start(ri RunInfo) error {
	cfg := map[string]any{}
	for k, v := range ri.Config {
		cfg[k] = map[string]any{"value": v, "desc": nil} // the SDK's config format
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	vars := map[string]any{
		"name": ri.ID, "project": ri.Project, "entity": nullable(ri.Entity),
		"groupName": nullable(ri.Group), "displayName": nullable(ri.DisplayName),
		"config": string(cfgJSON), "host": ri.Host, "jobType": "train", "tags": ri.Tags,
	}
	if ri.Tags == nil {
		vars["tags"] = []string{}
	}
	var out struct {
		UpsertBucket struct {
			Bucket struct {
				Name             string `json:"name"`
				HistoryLineCount int    `json:"historyLineCount"`
				Project          struct {
					Name   string `json:"name"`
					Entity struct {
						Name string `json:"name"`
					} `json:"entity"`
				} `json:"project"`
			} `json:"bucket"`
		} `json:"upsertBucket"`
	}
	if err := c.graphql(upsertBucket, vars, &out); err != nil {
		return err
	}
	b := out.UpsertBucket.Bucket
	c.entity, c.project, c.run = b.Project.Entity.Name, b.Project.Name, b.Name
	if c.entity == "" || c.project == "" || c.run == "" {
		return errors.New("W&B answered UpsertBucket without the run's entity, project and name")
	}
	c.historyLine = b.HistoryLineCount
	return nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (c *client) streamURL() string {
	return fmt.Sprintf("%s/files/%s/%s/%s/file_stream", c.base, url.PathEscape(c.entity), url.PathEscape(c.project), url.PathEscape(c.run))
}

// stream posts one history line (none when row is nil) and the summary
// so far: file_stream's
// wandb-history.jsonl chunk at the next line offset, and
// wandb-summary.json whole (offset 0), as the SDK's JSONL and summary
// file policies send them.
func (c *client) stream(row, summary map[string]any) error {
	var line []byte
	if row != nil {
		var err error
		if line, err = json.Marshal(row); err != nil {
			return err
		}
	}
	sum, err := json.Marshal(summary)
	if err != nil {
		return err
	}
	files := map[string]any{"wandb-summary.json": map[string]any{"offset": 0, "content": []string{string(sum)}}}
	if row != nil {
		files["wandb-history.jsonl"] = map[string]any{"offset": c.historyLine, "content": []string{string(line)}}
	}
	body, _ := json.Marshal(map[string]any{"files": files})
	if _, err := c.do(http.MethodPost, c.streamURL(), body, true, nil); err != nil {
		return err
	}
	if row != nil {
		c.historyLine++
	}
	return nil
}

const createRunFiles = `mutation CreateRunFiles($entity: String!, $project: String!, $run: String!, $files: [String!]!) {
  createRunFiles(input: {entityName: $entity, projectName: $project, runName: $run, files: $files}) {
    runID
    uploadHeaders
    files { name uploadUrl }
  }
}`

// upload puts one file of the run (path relative to its files, as the
// FilesRecord names it) where createRunFiles says, with the headers it
// lists as "Name:Value" strings.
func (c *client) upload(path string, data []byte) error {
	var out struct {
		CreateRunFiles struct {
			RunID         string   `json:"runID"`
			UploadHeaders []string `json:"uploadHeaders"`
			Files         []struct {
				Name      string `json:"name"`
				UploadURL string `json:"uploadUrl"`
			} `json:"files"`
		} `json:"createRunFiles"`
	}
	vars := map[string]any{"entity": c.entity, "project": c.project, "run": c.run, "files": []string{path}}
	if err := c.graphql(createRunFiles, vars, &out); err != nil {
		return err
	}
	h := http.Header{}
	for _, kv := range out.CreateRunFiles.UploadHeaders {
		if k, v, ok := strings.Cut(kv, ":"); ok {
			h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	for _, f := range out.CreateRunFiles.Files {
		if f.Name == path && f.UploadURL != "" {
			if _, err := c.do(http.MethodPut, f.UploadURL, data, false, h); err != nil {
				return err
			}
			c.uploaded = append(c.uploaded, path)
			return nil
		}
	}
	return fmt.Errorf("W&B gave no upload URL for %s", path)
}

// finish tells file_stream the run is complete with its exit code and
// the files uploaded; the server then marks it finished (or failed).
func (c *client) finish(exitCode int) error {
	up := c.uploaded
	if up == nil {
		up = []string{}
	}
	body, _ := json.Marshal(map[string]any{"complete": true, "exitcode": exitCode, "uploaded": up, "dropped": 0})
	_, err := c.do(http.MethodPost, c.streamURL(), body, true, nil)
	return err
}

// runURL is the run's page in the web app.
func (c *client) runURL() string {
	return fmt.Sprintf("%s/%s/%s/runs/%s", appURL(c.base), url.PathEscape(c.entity), url.PathEscape(c.project), url.PathEscape(c.run))
}
