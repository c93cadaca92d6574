package pyenv

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env/pybridge"
)

// maxPendingEpisodes bounds the played-but-unscored episodes a Python
// environment remembers (and its child keeps the State of). An episode
// that fails after its last reply is never scored; the oldest beyond the
// bound are forgotten, here and in the child.
const maxPendingEpisodes = 4096

// pendingEpisodes finds the episode a rollout came from. A rubric sees
// only the rollout's text, so a played episode is filed under the
// fingerprint of its prompt and completion. Rollouts with the same text
// may take each other's episode: that changes nothing for training, whose
// gradient depends only on the multiset of (text, reward).
type pendingEpisodes struct {
	mu     sync.Mutex
	byKey  map[string][]string // fingerprint → episode ids
	keys   map[string][]string // episode id → its fingerprints
	rows   map[string]pybridge.Row
	order  []string // episode ids, oldest first
	onDrop func(episode string)
}

func newPendingEpisodes(onDrop func(string)) *pendingEpisodes {
	return &pendingEpisodes{byKey: map[string][]string{}, keys: map[string][]string{},
		rows: map[string]pybridge.Row{}, onDrop: onDrop}
}

// fingerprint identifies a rollout by its text.
func fingerprint(prompt, completion []chat.Message) string {
	b, _ := json.Marshal([2][]chat.Message{prompt, completion})
	sum := sha256.Sum256(b)
	return string(sum[:])
}

// put files episode under keys, replacing where it was filed before.
func (p *pendingEpisodes) put(episode string, row pybridge.Row, keys ...string) {
	p.mu.Lock()
	_, known := p.keys[episode]
	p.unfile(episode)
	p.keys[episode] = keys
	p.rows[episode] = row
	for _, k := range keys {
		p.byKey[k] = append(p.byKey[k], episode)
	}
	if !known {
		p.order = append(p.order, episode)
	}
	var evicted []string
	for len(p.keys) > maxPendingEpisodes && len(p.order) > 0 {
		old := p.order[0]
		p.order = p.order[1:]
		if _, ok := p.keys[old]; ok {
			p.forgetLocked(old)
			evicted = append(evicted, old)
		}
	}
	p.mu.Unlock()
	for _, ep := range evicted {
		p.onDrop(ep)
	}
}

// take removes and returns an episode filed under key ("" when none).
func (p *pendingEpisodes) take(key string) (string, pybridge.Row) {
	p.mu.Lock()
	defer p.mu.Unlock()
	eps := p.byKey[key]
	if len(eps) == 0 {
		return "", pybridge.Row{}
	}
	ep := eps[0]
	row := p.rows[ep]
	p.forgetLocked(ep)
	return ep, row
}

// forget removes an episode (one that failed: its child dropped it).
func (p *pendingEpisodes) forget(episode string) {
	p.mu.Lock()
	p.forgetLocked(episode)
	p.mu.Unlock()
}

func (p *pendingEpisodes) forgetLocked(episode string) {
	p.unfile(episode)
	delete(p.keys, episode)
	delete(p.rows, episode)
	if len(p.order) > 0 && len(p.order) > 2*len(p.keys)+64 {
		// Compact the queue of episodes that are long gone.
		live := p.order[:0]
		for _, ep := range p.order {
			if _, ok := p.keys[ep]; ok {
				live = append(live, ep)
			}
		}
		p.order = live
	}
}

func (p *pendingEpisodes) unfile(episode string) {
	for _, k := range p.keys[episode] {
		eps := p.byKey[k]
		for i, e := range eps {
			if e == episode {
				eps = append(eps[:i:i], eps[i+1:]...)
				break
			}
		}
		if len(eps) == 0 {
			delete(p.byKey, k)
		} else {
			p.byKey[k] = eps
		}
	}
}
