module github.com/knotd/knotd

go 1.25.0
