// qvl-run's chat mode (--interactive): the user's turns come from stdin, one line each, and each
// answer streams to stdout followed by a blank line. Every answer is exactly what
// `qvl-run --messages` gives for the whole conversation so far with the same settings: the
// conversation is re-rendered with the chat template at every turn, and the engine's one slot
// still holds the previous turns' KV, so only the new suffix (the new user turn) is prefilled.
#pragma once

#include <qvl/qvl.h>

#include <atomic>

#include "args.h"

namespace qvl::app {

// Commands, each alone on its line: "/image PATH" and "/video PATH" attach an image or a video
// (sampled with --video-fps / --video-max-frames) to the next turn, "/clear" starts a new
// conversation (the -s system message stays; the cached prefix is dropped), "/exit" or the end of
// input quits.
// -i images, --video videos and -p (when given) make the first turn. A turn that fails (an
// unreadable image or video, a conversation that outgrew -c) is reported on stderr and dropped;
// the chat goes on. When
// *interrupted becomes true (Ctrl-C) the current answer stops and the chat goes on. With -v each
// turn reports on stderr its prompt tokens, how many of them came from the cache and its time to
// the first token. `engine` has one slot; every turn samples with `sampling`. Returns the
// process exit code (0 at the end of input).
int run_chat(const RunOptions& o, Engine& engine, const Sampling& sampling,
             std::atomic<bool>* interrupted);

}  // namespace qvl::app
