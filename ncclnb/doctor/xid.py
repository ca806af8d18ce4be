"""What an Xid number means: the NVIDIA driver's GPU error codes, as the
kernel log (``dmesg``, ``journalctl -k``) shows them::

    NVRM: Xid (PCI:0000:3b:00): 79, pid=4121, name=python, GPU has fallen off the bus.
    NVRM: Xid (0000:82:00): 13, 0003 00000000 ...          (drivers before about 400)

Written from NVIDIA's Xid table (https://docs.nvidia.com/deploy/xid-errors/)
for the codes a multi-GPU job meets. Each code says what failed and whose it
most likely is: ``hardware`` (drain the node, reset or replace the GPU),
``driver`` (the driver or its firmware: reset, update), ``program`` (a fault
in the code the GPU ran, usually the program's own kernel: the GPU is fine),
``consequence`` (the driver cleaning up after an earlier error or a killed
process: look at the Xid before it). The signatures ``gpu_xid``,
``gpu_xid_program_fault`` and ``gpu_xid_cleanup`` split the codes the same way;
a test keeps them in step with :data:`XIDS`.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

__all__ = ["Xid", "XIDS", "describe", "KINDS"]

KINDS = ("hardware", "driver", "program", "consequence")


class Xid(NamedTuple):
    meaning: str
    kind: str  # one of KINDS


_NVLINK_BLACKWELL = "an NVLink error reported by one of the GPU's NVLink units (Blackwell)"

XIDS: dict = {
    8: Xid("the GPU stopped processing: a kernel or the driver timed out", "driver"),
    13: Xid("graphics engine exception: usually the program (an out-of-range access in a kernel)", "program"),
    31: Xid("GPU memory page fault (MMU fault): usually the program (an illegal address in a kernel)", "program"),
    32: Xid("invalid or corrupted push buffer stream: the driver, PCIe or system memory", "hardware"),
    38: Xid("driver firmware error", "driver"),
    43: Xid("the GPU stopped the program's work after a fault in its kernel; the GPU itself is fine", "program"),
    45: Xid("preemptive cleanup after an earlier error or a killed process", "consequence"),
    48: Xid("double-bit (uncorrectable) ECC error in GPU memory", "hardware"),
    61: Xid("internal micro-controller breakpoint or warning", "hardware"),
    62: Xid("internal micro-controller halt", "hardware"),
    63: Xid("ECC page retirement or row remapping recorded: a GPU reset applies it", "hardware"),
    64: Xid("ECC page retirement or row remapping failed", "hardware"),
    68: Xid("video decoder (NVDEC) exception", "hardware"),
    69: Xid("graphics engine class error", "hardware"),
    74: Xid("NVLink error: a link between GPUs failed or reported a fatal error", "hardware"),
    79: Xid("the GPU has fallen off the bus: it stopped answering on PCIe", "hardware"),
    92: Xid("high rate of single-bit ECC errors", "hardware"),
    94: Xid("contained ECC error: the processes using the bad memory were stopped; reset the GPU", "hardware"),
    95: Xid("uncontained ECC error: every process on the GPU is affected; reset the GPU", "hardware"),
    109: Xid("context switch timeout", "driver"),
    119: Xid("GSP (the GPU's system processor) did not answer an RPC in time", "hardware"),
    120: Xid("GSP (the GPU's system processor) error", "hardware"),
    121: Xid("C2C (chip-to-chip) link error", "hardware"),
    140: Xid("unrecovered ECC error", "hardware"),
    144: Xid(_NVLINK_BLACKWELL, "hardware"),
    145: Xid(_NVLINK_BLACKWELL, "hardware"),
    146: Xid(_NVLINK_BLACKWELL, "hardware"),
    147: Xid(_NVLINK_BLACKWELL, "hardware"),
    148: Xid(_NVLINK_BLACKWELL, "hardware"),
    149: Xid(_NVLINK_BLACKWELL, "hardware"),
    150: Xid(_NVLINK_BLACKWELL, "hardware"),
    154: Xid("the driver changed the GPU's recovery action (a GPU reset or a node reboot is required)", "hardware"),
}


def describe(xid: object) -> Optional[str]:
    """ "Xid 79: the GPU has fallen off the bus: ..." for an Xid number (an
    int, or the digits a pattern captured); "Xid N" for a number the table
    does not know; None for something that is not an Xid number."""
    text = str(xid).strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 5):
        return None
    known = XIDS.get(int(text))
    return f"Xid {int(text)}: {known.meaning}" if known else f"Xid {int(text)}"
