package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// pages checks a KVPages operand against a cache buffer of width-element
// rows and returns the table. The table's entries live on the device and
// are not read here: the caller (model.KVCache) maps every block a token
// reads, as kernels.KVPages requires.
func (b *Backend) pages(op string, p kernels.KVPages, cache *buffer, width int) *buffer {
	p.Check(op)
	i32(op, p.BlockSize, p.MaxBlocks, p.BlockSize*p.MaxBlocks, p.BlockSize*width)
	if per := p.BlockSize * width; cache.n%per != 0 || cache.n < per {
		panic(fmt.Sprintf("cuda: %s: cache of %d elements is not a whole number of blocks of %d rows × %d", op, cache.n, p.BlockSize, width))
	}
	return b.buf(op, "pages.Table", p.Table, p.Table.Len(), kernels.I32)
}
