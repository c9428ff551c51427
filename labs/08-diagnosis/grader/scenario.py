"""Lab 08: a seed's scenario, as guest/diagnose.c's scenario_of() computes it.

`make -C labs/08-diagnosis test` checks that the two agree on many seeds
(diagnose -c, built for the host, against answer_line()).
"""

CULPRITS = ["smaps_rollup", "proc_mem", "khugepaged"]
# What an answer may name: the culprits, and the decoy uprobe (always the bystander's).
ANSWERS = CULPRITS + ["uprobe"]
# The switch that relieves each culprit, as diagnose -c prints it; the first
# knob is the one the answer must turn on.
SWITCH = {
    "smaps_rollup": "smaps_rollup_vma_lock=1",
    "proc_mem": "access_remote_vm_vma_lock=1",
    "khugepaged": "khugepaged_skip_batch=1024,rwsem_steal_policy=1",
}
MASK = (1 << 64) - 1


def splitmix64(state):
    """(next state, value), as diagnose.c's splitmix64()."""
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def scenario(seed):
    """{'culprit', 'process', 'bystander', 'scanner', 'memreader', 'switch'}"""
    x, v = splitmix64(seed & MASK)
    culprit = CULPRITS[v % len(CULPRITS)]
    names = [1, 2, 3]
    for i in (2, 1):
        x, v = splitmix64(x)
        j = v % (i + 1)
        names[i], names[j] = names[j], names[i]
    s = {"culprit": culprit, "bystander": "svc%d" % names[0], "scanner": "svc%d" % names[1],
         "memreader": "svc%d" % names[2], "switch": SWITCH[culprit]}
    s["process"] = {"smaps_rollup": s["scanner"], "proc_mem": s["memreader"],
                    "khugepaged": "khugepaged"}[culprit]
    return s


def answer_line(seed):
    """The line `diagnose -s SEED -c` prints."""
    s = scenario(seed)
    return "seed %d: culprit=%s process=%s lock=mmap_lock switch=%s" % (
        seed, s["culprit"], s["process"], s["switch"])
