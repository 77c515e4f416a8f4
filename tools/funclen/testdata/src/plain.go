package src

func one() {}

// T is a type with a method.
type T struct{}

func (t *T) four() int {
	x := 1
	return x
}

func generic[E any](e E) E {
	return e
}
