// Package structure holds no code, only tests of the module's shape that
// no single package can check about itself: the size of the packages that
// tend to collect work belonging elsewhere (issue 25's bars).
package structure
