package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// BenchmarkServe64 measures throughput of 64 chat requests (32 generated
// tokens each, ignore_eos) on the tiny model over HTTP, sent by 64
// concurrent clients and, as the reference in the same run, by one client
// at a time: the ratio is what continuous batching buys on this machine.
// Run: go test -run '^$' -bench BenchmarkServe64 -benchtime 5x ./serve
func BenchmarkServe64(b *testing.B) {
	const requests, tokens = 64, 32
	f := newFixture(b, Config{Slots: 64, MaxQueue: 64, MaxLen: 256})
	body, _ := json.Marshal(map[string]any{"messages": user("benchmark prompt"), "max_tokens": tokens, "ignore_eos": true, "temperature": 1})
	one := func() {
		resp, err := http.Post(f.url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	for _, clients := range []int{1, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			start := time.Now()
			for range b.N {
				var wg sync.WaitGroup
				next := make(chan struct{}, requests)
				for range requests {
					next <- struct{}{}
				}
				close(next)
				for range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range next {
							one()
						}
					}()
				}
				wg.Wait()
			}
			secs := time.Since(start).Seconds()
			b.ReportMetric(float64(b.N*requests)/secs, "req/s")
			b.ReportMetric(float64(b.N*requests*tokens)/secs, "tok/s")
		})
	}
}
