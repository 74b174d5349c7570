#include <gtest/gtest.h>

#include <cstdlib>

#include "common/env.hpp"
#include "common/error.hpp"

namespace {

using blink::Error;
namespace env = blink::env;

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

blinkResult_t statusOf(auto&& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.status();
  }
  return blinkSuccess;
}

TEST(Env, ParsesIntLists) {
  EXPECT_EQ(env::parseIntList("0,1,2,4", "--gpus"), (std::vector<int>{0, 1, 2, 4}));
  EXPECT_EQ(env::parseIntList(" 7 , 3", "--gpus"), (std::vector<int>{7, 3}));
  EXPECT_EQ(env::parseIntList("5", "--gpus"), (std::vector<int>{5}));
}

TEST(Env, RejectsBadIntListsWithTheirReason) {
  for (const char* bad : {"", "0,,1", "a", "1,-2", "1,1", "3,", "1.5"}) {
    try {
      env::parseIntList(bad, "--gpus");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), blinkInvalidInput);
      EXPECT_NE(std::string(e.what()).find("--gpus"), std::string::npos) << e.what();
    }
  }
  try {
    env::parseIntList("1,2,1", "--gpus");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("repeats"), std::string::npos) << e.what();
  }
}

TEST(Env, ChoiceIsCaseInsensitiveAndDefaults) {
  {
    ScopedEnv debug("BLINK_DEBUG", "info");
    EXPECT_EQ(env::getChoice("BLINK_DEBUG"), "INFO");
  }
  unsetenv("BLINK_DEBUG");
  EXPECT_EQ(env::getChoice("BLINK_DEBUG"), "WARN");
}

TEST(Env, InvalidValueNamesVariableAndValue) {
  ScopedEnv debug("BLINK_DEBUG", "LOUD");
  try {
    env::validateAll();
    FAIL() << "BLINK_DEBUG=LOUD accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), blinkInvalidInput);
    std::string what = e.what();
    EXPECT_NE(what.find("BLINK_DEBUG"), std::string::npos) << what;
    EXPECT_NE(what.find("LOUD"), std::string::npos) << what;
    EXPECT_NE(what.find("NONE|WARN|INFO|TRACE"), std::string::npos) << what;
  }
}

TEST(Env, InvalidGpuListIsRejectedAtValidation) {
  ScopedEnv gpus("BLINK_TOPO_GPUS", "0,x");
  EXPECT_EQ(statusOf([] { env::validateAll(); }), blinkInvalidInput);
}

TEST(Env, UnknownBlinkVariableIsOnlyAWarning) {
  ScopedEnv typo("BLINK_DEBGU", "INFO");
  EXPECT_EQ(statusOf([] { env::validateAll(); }), blinkSuccess);
}

TEST(Env, ScriptVariablesAreNotUnknown) {
  ScopedEnv sanitize("BLINK_SANITIZE", "address");
  ScopedEnv jobs("BLINK_BUILD_JOBS", "2");
  ScopedEnv fuzz_seconds("BLINK_FUZZ_SECONDS", "10");
  testing::internal::CaptureStderr();
  env::validateAll();
  EXPECT_EQ(testing::internal::GetCapturedStderr().find("unknown"), std::string::npos);
}

TEST(Env, UnknownVariableIsNamedInTheWarning) {
  ScopedEnv typo("BLINK_DEBGU", "INFO");
  testing::internal::CaptureStderr();
  env::validateAll();
  EXPECT_NE(testing::internal::GetCapturedStderr().find("BLINK_DEBGU"), std::string::npos);
}

TEST(Env, ReadingAnUnregisteredVariableIsABug) {
  EXPECT_EQ(statusOf([] { (void)env::get("BLINK_NOT_A_VARIABLE"); }), blinkInternalError);
}

TEST(Env, MarkdownTableListsEveryVariable) {
  std::string table = env::markdownTable();
  for (const auto& var : env::registry()) {
    EXPECT_NE(table.find("`" + std::string(var.name) + "`"), std::string::npos) << var.name;
  }
}

}  // namespace
