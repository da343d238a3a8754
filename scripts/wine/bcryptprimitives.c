/*
 * A bcryptprimitives.dll for Wine 8 (Debian 12), which lacks one: Go >= 1.22
 * calls ProcessPrng from it for random bytes when its runtime starts, and
 * ends the process if it cannot. scripts/wine-test builds this with mingw-w64
 * and puts it in the Wine prefix's system32, where Go loads it from.
 * ProcessPrng fills the buffer from RtlGenRandom (advapi32's
 * SystemFunction036), which Wine implements, and reports its failure.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buf, ULONG len); /* RtlGenRandom */

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, n))
            return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}

BOOL WINAPI DllMain(HINSTANCE h, DWORD reason, LPVOID reserved)
{
    return TRUE;
}
