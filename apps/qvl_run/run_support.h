// What the modes of qvl-run share (one answer, chat, dry run): error reporting with the CLI
// contract's exit codes, the conversation the flags describe, and the sampling settings.
#pragma once

#include <qvl/qvl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "args.h"

namespace qvl::app {

// Prints "qvl-run: error: <message>" (and "hint: <hint>") on stderr; returns code.
int fail(int code, const std::string& message, const char* hint = nullptr);
int fail(int code, const Status& st, const char* hint = nullptr);

// kOutOfRange when n_new tokens do not fit a context of `capacity`: "<what> (<n_new> tokens)
// does not fit the context of <capacity> tokens".
Status check_fits(std::int64_t n_new, std::int64_t capacity, const std::string& what);

// Reads and compiles --json-schema / --grammar into o->constraint; on failure prints the error
// (the file and what is wrong) and returns the exit code (2 both given, 4 unreadable or
// refused), else -1.
int load_output_grammar(RunOptions* o);

// Preparing the prompt fails on its input (exit 4), an image over the decoder's pixel or file
// size limit included, whatever its format; only running out of memory is exit 5.
int input_exit(const Status& st);

double peak_rss_mb();
// Resident memory now (/proc/self/statm), in MB; 0 when unreadable.
double current_rss_mb();

// Reads the image or video given as "-i -" or "--video -" from stdin (bounded like a file).
Result<std::vector<std::uint8_t>> read_stdin_image();

// --video-fps and --video-max-frames on every video part of the message (0: the model's).
void apply_video_sampling(const RunOptions& o, Message* message);

// The user turn the flags describe: the -i images and --video videos first, in the order given
// (the "-" one from stdin_image), then the text.
Message user_turn(const RunOptions& o, const std::string& text,
                  const std::vector<std::uint8_t>& stdin_image);

// The conversation the flags describe: --messages, or a system turn plus one user turn.
Result<std::vector<Message>> build_messages(const RunOptions& o, const std::string& text,
                                            const std::vector<std::uint8_t>& stdin_image);

// generation_config.json's sampling, overridden by the flags (Model::sampling); a random seed
// when none is given.
Sampling sampling_from(const RunOptions& o, const Model& model);

// The model options the flags ask for (--weights, --vision-weights) with the environment's
// logits screen; for_generation false for a dry run (no weights read).
ModelOptions model_options(const RunOptions& o, bool logits_screen, bool for_generation);

}  // namespace qvl::app
