"""The queue in virtual time, below both what replays it: `smq simulate` (simulation/) and the live
start estimates (forecast/)."""
