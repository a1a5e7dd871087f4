// A one-line progress indicator on stderr for long work (loading, the vision tower block by
// block with an ETA), for people watching a terminal. Silent when stderr is not a terminal, with
// --json or -q: scripts and logs never see it.
#pragma once

#include <string>

#include "common/stopwatch.h"

namespace qvl::app {

class Progress {
  public:
    explicit Progress(bool enabled) : enabled_(enabled) {}
    // Whether qvl-run should show progress: stderr is a terminal, no --json, no -q.
    static bool wanted(bool json, int verbosity);

    // Starts a phase ("loading the model"); its steps are timed from here.
    void phase(const std::string& what);
    // Step `done` of `total` of the current phase, with the remaining time extrapolated.
    void step(const std::string& what, int done, int total);
    // Erases the line (before the answer streams on the same terminal).
    void clear();

  private:
    void show(const std::string& line);
    bool enabled_ = false;
    bool shown_ = false;
    Stopwatch phase_timer_;
};

}  // namespace qvl::app
