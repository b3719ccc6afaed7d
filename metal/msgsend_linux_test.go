package metal

import "reflect"

const libobjcPathForTest = "" // darwin only

// clearFunc resets a registered trampoline to nil.
func clearFunc(fptr any) {
	v := reflect.ValueOf(fptr).Elem()
	v.Set(reflect.Zero(v.Type()))
}
