// engine/sigterm.h — SIGTERM as a request to end a campaign gracefully (e.g. from `timeout`): no new
// proposals, the candidates in flight are judged and recorded, the outputs are written. A second
// SIGTERM more than two seconds after the first terminates at once (the default action; the store
// loses nothing either way); one sooner is the same request: `timeout` signals its child and then
// the child's whole process group, so the campaign gets two SIGTERMs microseconds apart.
#pragma once
#include <signal.h>

namespace ka {

// Installs the handler for its lifetime (restoring the previous one after) and clears any earlier
// request. One at a time per process.
class SigtermGuard {
 public:
  SigtermGuard();
  ~SigtermGuard();
  SigtermGuard(const SigtermGuard&) = delete;
  SigtermGuard& operator=(const SigtermGuard&) = delete;

 private:
  struct sigaction old_ {};
};

// Whether SIGTERM was received since the guard was installed.
bool termination_requested();

}  // namespace ka
