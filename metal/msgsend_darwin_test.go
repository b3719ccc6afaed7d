package metal

const libobjcPathForTest = libobjcPath

func clearFunc(any) {}
