#include "io/json_write.h"

#include <gtest/gtest.h>

#include <limits>

namespace qvl::io {
namespace {

TEST(JsonWrite, QuotesEscapesAndRepairsUtf8) {
    EXPECT_EQ(json_quote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
    EXPECT_EQ(json_quote("tab\there\r"), "\"tab\\there\\r\"");
    EXPECT_EQ(json_quote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
    EXPECT_EQ(json_quote("bad\xff\xc3"), "\"bad\xEF\xBF\xBD\xEF\xBF\xBD\"");
    EXPECT_EQ(json_quote("\xed\xa0\x80"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");  // surrogate
    EXPECT_EQ(json_quote(""), "\"\"");
}

TEST(JsonWrite, NumbersJsonCanHold) {
    EXPECT_EQ(json_number(1.5), "1.5");
    EXPECT_EQ(json_number(std::numeric_limits<double>::quiet_NaN()), "0");
    EXPECT_EQ(json_number(std::numeric_limits<double>::infinity()), "0");
}

}  // namespace
}  // namespace qvl::io
