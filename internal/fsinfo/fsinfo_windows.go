// Which filesystem holds a directory, on Windows.

package fsinfo

import (
	"os"

	"golang.org/x/sys/windows"
)

// Probe names the filesystem holding the open directory d as Windows
// does ("NTFS", "ReFS", "FAT32", …; GetVolumeInformationByHandleW), with
// no options: on Windows nothing but the type is known, and every type
// gets the full protocol. Type "" means unknown.
func Probe(d *os.File) Info {
	var name [windows.MAX_PATH + 1]uint16
	err := control(d, func(h windows.Handle) error {
		return windows.GetVolumeInformationByHandle(h, nil, 0, nil, nil, nil, &name[0], uint32(len(name)))
	})
	if err != nil {
		return Info{}
	}
	return Info{Type: windows.UTF16ToString(name[:])}
}

// control runs fn on d's handle.
func control(d *os.File, fn func(windows.Handle) error) error {
	rc, err := d.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(windows.Handle(fd)) }); err != nil {
		return err
	}
	return ferr
}
