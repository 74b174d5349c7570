// Where this process runs on its machine, for the job graph: the socket (hwloc
// package) its CPU binding lies in. Unbound processes have no stable place (the
// scheduler moves them), so they are reported as such rather than by where they
// happen to run right now: every run of the same job then plans the same way.
#pragma once

namespace blink::topo {

// The logical index of the package that holds every CPU this process is bound to
// (which is package 0 on a one-socket machine, bound or not); -1 when the binding
// spans several packages (unbound) or cannot be read.
int boundPackage();

}  // namespace blink::topo
