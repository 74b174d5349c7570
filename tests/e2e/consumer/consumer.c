/* Links against an installed Blink and checks the library is the one the headers describe. */
#include <blink/blink.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  int version = 0;
  if (blinkGetVersion(&version) != blinkSuccess || version != BLINK_VERSION_CODE) {
    fprintf(stderr, "version mismatch: library %d, header %d\n", version, BLINK_VERSION_CODE);
    return 1;
  }
  if (strncmp(blinkGetBuildInfo(), "Blink ", 6) != 0) {
    fprintf(stderr, "unexpected build info '%s'\n", blinkGetBuildInfo());
    return 1;
  }
  printf("%s\n", blinkGetBuildInfo());
  return 0;
}
