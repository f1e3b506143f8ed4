// The byte codec that carries partition results between MPI ranks: values come back as
// written, and a short or long message is an error, never a wrong value.
#include "sim/core/bytes.h"

#include <gtest/gtest.h>

#include <limits>

namespace fleetsim::core {
namespace {

TEST(Bytes, ValuesComeBackAsWritten) {
  ByteWriter w;
  w.put<int32_t>(-7);
  w.put<uint64_t>(std::numeric_limits<uint64_t>::max());
  w.put(0.1);  // not exactly representable: must come back bit for bit
  w.put_string("eu/b200");
  w.put_vector(std::vector<uint64_t>{3, 0, 5});
  w.put_vector(std::vector<double>{});
  const std::string bytes = w.take();
  // 4 + 8 + 8 + (8 + 7) + (8 + 3·8) + 8 bytes.
  EXPECT_EQ(bytes.size(), 4u + 8 + 8 + 15 + 32 + 8);
  ByteReader r(bytes, "test message");
  EXPECT_EQ(r.get<int32_t>(), -7);
  EXPECT_EQ(r.get<uint64_t>(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(r.get<double>(), 0.1);
  EXPECT_EQ(r.get_string(), "eu/b200");
  EXPECT_EQ(r.get_vector<uint64_t>(), (std::vector<uint64_t>{3, 0, 5}));
  EXPECT_TRUE(r.get_vector<double>().empty());
  EXPECT_NO_THROW(r.expect_end());
}

TEST(Bytes, ShortLongAndDamagedMessagesAreErrors) {
  ByteWriter w;
  w.put<double>(1.5);
  const std::string bytes = w.take();
  const std::string short_msg = bytes.substr(0, 7);
  ByteReader s(short_msg, "partition 2");
  try {
    s.get<double>();
    FAIL() << "read 8 bytes from 7";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "damaged partition 2: 7 bytes, read up to byte 0");
  }
  const std::string long_msg = bytes + "x";
  ByteReader l(long_msg, "partition 2");
  EXPECT_EQ(l.get<double>(), 1.5);
  EXPECT_THROW(l.expect_end(), std::runtime_error);  // a byte left over
  // A length that the message cannot hold (2^40 strings in 8 bytes) fails before any
  // allocation.
  ByteWriter big;
  big.put<uint64_t>(uint64_t{1} << 40);
  const std::string huge = big.take();
  ByteReader h(huge, "partition 2");
  EXPECT_THROW(h.get_vector<uint64_t>(), std::runtime_error);
}

}  // namespace
}  // namespace fleetsim::core
