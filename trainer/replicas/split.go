package replicas

import (
	"cmp"
	"slices"
)

// splitRuns cuts n items of the given costs into parts consecutive runs,
// as even in cost as cuts between items make them: part d starts where
// the running cost is nearest d/parts of the total. A play's examples are
// cut this way, since their seeds follow their place in the call (runs
// keep that place a FirstExample offset). Returns parts+1 bounds; a part
// may be empty.
func splitRuns(costs []int, parts int) []int {
	prefix := make([]int, len(costs)+1)
	for i, c := range costs {
		prefix[i+1] = prefix[i] + c
	}
	total := prefix[len(costs)]
	bounds := make([]int, parts+1)
	bounds[parts] = len(costs)
	for d := 1; d < parts; d++ {
		target := float64(total) * float64(d) / float64(parts)
		i := bounds[d-1]
		for i < len(costs) && float64(prefix[i+1]) <= target {
			i++
		}
		// i is the last bound at or below the target; the next may be nearer.
		if i < len(costs) && float64(prefix[i+1])-target < target-float64(prefix[i]) {
			i++
		}
		bounds[d] = i
	}
	return bounds
}

// splitGroups assigns groups of the given costs to parts devices, a whole
// group to one device: the costliest group first, each to the device with
// the least cost so far (the lowest-numbered on a tie). It returns each
// group's device.
func splitGroups(costs []int, parts int) []int {
	order := make([]int, len(costs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(costs[b], costs[a]) })
	load := make([]int, parts)
	device := make([]int, len(costs))
	for _, g := range order {
		d := 0
		for k := range load {
			if load[k] < load[d] {
				d = k
			}
		}
		device[g] = d
		load[d] += costs[g]
	}
	return device
}
