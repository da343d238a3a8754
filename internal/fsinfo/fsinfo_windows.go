// Which filesystem holds a directory, and which directory it is, on
// Windows.

package fsinfo

import (
	"os"
	"strconv"

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

// DirID identifies the open directory d: its volume's serial number and
// its file index (GetFileInformationByHandle), which a rename or a move
// within the volume keeps and a copy elsewhere does not. "" if not known.
func DirID(d *os.File) string {
	var fi windows.ByHandleFileInformation
	if err := control(d, func(h windows.Handle) error { return windows.GetFileInformationByHandle(h, &fi) }); err != nil {
		return ""
	}
	return strconv.FormatUint(uint64(fi.VolumeSerialNumber), 16) + "." +
		strconv.FormatUint(uint64(fi.FileIndexHigh)<<32|uint64(fi.FileIndexLow), 16)
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
