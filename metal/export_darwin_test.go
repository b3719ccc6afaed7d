package metal

// ExportSystemInfo gives the external tests what the system device chose:
// its MSL version and math mode.
func ExportSystemInfo(d Device) (MSLVersion, MathMode) {
	sd := d.(*systemDevice)
	return sd.LanguageVersion(), sd.mathMode
}
