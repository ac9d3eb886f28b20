package console

const openFlags = 0
