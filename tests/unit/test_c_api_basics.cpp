#include <gtest/gtest.h>

#include <string>

#include "blink/blink.h"
#include "common/build_config.h"
#include "common/error.hpp"

namespace {

TEST(CApi, VersionMatchesHeader) {
  int version = 0;
  ASSERT_EQ(blinkGetVersion(&version), blinkSuccess);
  EXPECT_EQ(version, BLINK_VERSION_CODE);
  EXPECT_EQ(blinkGetVersion(nullptr), blinkInvalidArgument);
}

// The build string says what runs, not which CMake options were on: a UCX or CUDA
// found at configure time moves no data until a transport uses it.
TEST(CApi, BuildInfoSaysWhatRuns) {
  std::string info = blinkGetBuildInfo();
  EXPECT_EQ(info.rfind(std::string("Blink ") + BLINK_VERSION_STRING, 0), 0u) << info;
  EXPECT_NE(info.find(std::string("git ") + BLINK_GIT_HASH), std::string::npos) << info;
  EXPECT_NE(info.find("shm, pmpi, sockets;"), std::string::npos) << info;
  EXPECT_NE(info.find("memory: host, device within a node (BLINK_DEVICE);"), std::string::npos)
      << info;
  EXPECT_NE(info.find(BLINK_HAVE_CUDA ? "CUDA kernels compiled (sm_" : "CUDA: not built"),
            std::string::npos)
      << info;
  EXPECT_NE(info.find(BLINK_HAVE_UCX ? "UCX: the ucx transport, the default between nodes"
                                     : "UCX: not built"),
            std::string::npos)
      << info;
  EXPECT_EQ(info.find(" on,"), std::string::npos) << info;
  EXPECT_STREQ(blinkGetBuildInfo(), blinkGetBuildInfo());  // one static string
  EXPECT_EQ(blinkGetBuildInfo(), blinkGetBuildInfo());
}

TEST(CApi, EveryResultHasItsOwnString) {
  std::set<std::string> seen;
  for (int r = 0; r < blinkNumResults; ++r) {
    std::string text = blinkGetErrorString(static_cast<blinkResult_t>(r));
    EXPECT_FALSE(text.empty());
    EXPECT_TRUE(seen.insert(text).second) << "duplicate text: " << text;
  }
  EXPECT_STREQ(blinkGetErrorString(static_cast<blinkResult_t>(15)), "unknown result code");
}

TEST(CApi, GuardTranslatesExceptionsAndRemembersTheMessage) {
  EXPECT_EQ(blink::guardCApi([] {}), blinkSuccess);
  EXPECT_EQ(blink::guardCApi([] { throw blink::Error(blinkTimeout, "peer 3 never came"); }),
            blinkTimeout);
  EXPECT_STREQ(blinkGetLastError(), "peer 3 never came");
  EXPECT_EQ(blink::guardCApi([] { throw std::logic_error("oops"); }), blinkInternalError);
  EXPECT_STREQ(blinkGetLastError(), "oops");
}

}  // namespace
