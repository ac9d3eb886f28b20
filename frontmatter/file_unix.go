//go:build unix

package frontmatter

import "os"

// syncDir makes a rename in dir durable: it syncs the directory itself.
func syncDir(dir string) (err error) {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := d.Close(); err == nil {
			err = cerr
		}
	}()
	return d.Sync()
}
