// The lesson list: each lesson's progress, which the browser keeps.
