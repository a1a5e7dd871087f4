// Fuzzes model/chat_template.h load_messages_file (--messages) and renders what it accepts.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "text/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static qvl::fuzz::MemFile file("messages.json");
    file.write(data, size);
    qvl::base::Result<std::vector<qvl::text::ChatMessage>> m =
        qvl::text::load_messages_file(file.path());
    if (!m.ok()) {
        if (m.status().message().empty()) qvl::fuzz::fail("error without a message");
        return 0;
    }
    if (m->empty()) qvl::fuzz::fail("accepted an empty conversation");
    for (const qvl::text::ChatMessage& msg : m.value()) {
        if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" &&
            msg.role != "tool") {
            qvl::fuzz::fail("accepted role '" + msg.role + "'");
        }
    }
    const std::string rendered = qvl::text::render_chat(m.value(), true);
    if (rendered.find("<|im_start|>assistant\n") == std::string::npos) {
        qvl::fuzz::fail("rendering lacks the generation prompt");
    }
    return 0;
}
