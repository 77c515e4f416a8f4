package src

func inTest() {
}
