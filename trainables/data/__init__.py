"""Data sources for numsweep: generated mathematics problems, benchmark files and instruction data,
all returned as `Record`s."""
