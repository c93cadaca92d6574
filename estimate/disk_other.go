//go:build !unix

package estimate

func diskFree(string) (int64, bool) { return 0, false }
