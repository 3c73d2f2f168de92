# Sourced by scripts/failures.sh (uses its case_dir and capture): C and C++
# compile and link errors (gcc, g++), make, valgrind, AddressSanitizer, with
# Debian's gcc, g++, make and valgrind.
# Sourced, so $work and the helpers come from failures.sh; the projects'
# sources are quoted literally on purpose.
# shellcheck shell=bash disable=SC2016,SC2154

if case_dir gcc-undeclared; then
  printf '#include <stdio.h>\n\nint main(void) {\n    int total = 0;\n    for (int i = 0; i < 3; i++) totl += i;\n    printf("%%d\\n", total);\n    return 0;\n}\n' >sum.c
  capture gcc-undeclared build_failure 'gcc -Wall -o sum sum.c' 'sum.c:5' 'totl' 'undeclared' \
    finding=sum.c:5
fi
if case_dir gcc-undefined-reference; then
  printf 'int checksum(const char *s);\n\nint main(void) {\n    return checksum("abc") == 294 ? 0 : 1;\n}\n' >main.c
  capture gcc-undefined-reference build_failure 'gcc -o app main.c' "undefined reference to \`checksum'"
fi
if case_dir gcc-missing-header; then
  printf '#include <stdio.h>\n#include <curl/curl.h>\n\nint main(void) {\n    return curl_global_init(0);\n}\n' >fetch.c
  capture gcc-missing-header missing_dependency 'gcc -c fetch.c' 'curl/curl.h'
fi
if case_dir gcc-werror; then
  printf '#include <stdio.h>\n\nint main(void) {\n    unsigned n = 3;\n    int i = -1;\n    if (i < n) puts("less");\n    return 0;\n}\n' >cmp.c
  capture gcc-werror build_failure 'gcc -Wall -Wextra -Werror -c cmp.c' 'cmp.c:6'
fi
if case_dir gxx-no-member; then
  cat >shapes.cpp <<'CPP'
#include <iostream>
#include <vector>

struct Circle {
    double r;
    double area() const { return 3.14159 * r * r; }
};

int main() {
    std::vector<Circle> cs{{1.0}, {2.0}};
    double total = 0;
    for (const auto &c : cs) total += c.perimeter();
    std::cout << total << "\n";
}
CPP
  capture gxx-no-member build_failure 'g++ -std=c++17 -o shapes shapes.cpp' 'shapes.cpp:12' 'perimeter' \
    finding=shapes.cpp:12
fi
if case_dir gxx-template-error; then
  cat >sort.cpp <<'CPP'
#include <algorithm>
#include <list>

int main() {
    std::list<int> xs{3, 1, 2};
    std::sort(xs.begin(), xs.end());
    return xs.front();
}
CPP
  capture gxx-template-error build_failure 'g++ -std=c++17 -c sort.cpp' 'sort.cpp:6' known_miss
fi
if case_dir make-gcc-link-error; then
  printf 'double mean(const double *xs, int n);\n\nint main(void) {\n    double xs[] = {1, 2};\n    return (int)mean(xs, 2);\n}\n' >main.c
  printf '#include <math.h>\n\ndouble mean(const double *xs, int n) {\n    double s = 0;\n    for (int i = 0; i < n; i++) s += log(xs[i]);\n    return exp(s / n);\n}\n' >stats.c
  printf 'app: main.o stats.o\n\tgcc -o app main.o stats.o\n\n%%.o: %%.c\n\tgcc -c $<\n' >Makefile
  capture make-gcc-link-error build_failure 'make' "undefined reference to \`log'" 'stats.c'
fi
if case_dir make-test-binary-fails; then
  printf '#include <stdio.h>\n\nstatic int add(int a, int b) { return a - b; }\n\nint main(void) {\n    if (add(2, 2) != 4) {\n        fprintf(stderr, "FAIL: add(2, 2) = %%d, want 4\\n", add(2, 2));\n        return 1;\n    }\n    puts("ok");\n    return 0;\n}\n' >test_add.c
  printf 'test: test_add\n\t./test_add\n\ntest_add: test_add.c\n\tgcc -o $@ $<\n' >Makefile
  capture make-test-binary-fails test_failure 'make test' 'add(2, 2) = 0, want 4'
fi
if case_dir valgrind-invalid-read; then
  printf '#include <stdlib.h>\n#include <stdio.h>\n\nint main(void) {\n    int *xs = malloc(3 * sizeof *xs);\n    for (int i = 0; i < 3; i++) xs[i] = i;\n    free(xs);\n    printf("%%d\\n", xs[1]);\n    return 0;\n}\n' >uaf.c
  gcc -g -O0 -o uaf uaf.c
  capture valgrind-invalid-read runtime_error 'valgrind -q --error-exitcode=1 ./uaf' \
    'Invalid read' 'uaf.c:8'
fi
if case_dir asan-heap-overflow; then
  printf '#include <stdlib.h>\n\nint main(void) {\n    char *buf = malloc(8);\n    for (int i = 0; i <= 8; i++) buf[i] = (char)i;\n    free(buf);\n    return 0;\n}\n' >overflow.c
  gcc -g -fsanitize=address -o overflow overflow.c
  capture asan-heap-overflow runtime_error './overflow' 'heap-buffer-overflow' 'overflow.c:5'
fi
