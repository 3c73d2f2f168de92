# Sourced by scripts/failures.sh (uses its case_dir and capture): the other
# tools a gate runs — shellcheck (Debian's package), perl and prove, javac,
# java and Maven (offline, from Debian's maven-repo), and commands stopped by
# a time limit or a signal.
# Sourced, so $work and the helpers come from failures.sh; the projects'
# sources are quoted literally on purpose.
# shellcheck shell=bash disable=SC2016,SC2154

# --- shellcheck ------------------------------------------------------------------
if case_dir shellcheck-warnings; then
  cat >deploy.sh <<'SH'
#!/bin/sh
target=$1
files=$(ls *.tar.gz)
for f in $files; do
  cp $f $target/
done
if [ $target == "prod" ]; then
  echo "deployed"
fi
SH
  capture shellcheck-warnings lint_failure 'shellcheck deploy.sh' 'deploy.sh' 'SC2086'
fi
if case_dir shellcheck-gcc-format; then
  printf '#!/bin/bash\nread name\necho "hello $name" | tr a-z A-Z\ncd build\nrm -rf *\n' >clean.sh
  capture shellcheck-gcc-format lint_failure 'shellcheck -f gcc clean.sh' 'clean.sh:2' \
    finding=clean.sh:2 known_miss
fi

# --- perl ------------------------------------------------------------------------
if case_dir prove-fail; then
  mkdir t lib
  printf 'package Temp;\nsub c_to_f { my ($c) = @_; return $c * 9 / 5 + 23 }\n1;\n' >lib/Temp.pm
  cat >t/temp.t <<'PL'
use strict;
use warnings;
use Test::More tests => 2;
use Temp;

is(Temp::c_to_f(0), 32, 'freezing point');
is(Temp::c_to_f(100), 212, 'boiling point');
PL
  capture prove-fail test_failure 'prove -l t' 'freezing point' 't/temp.t'
fi
if case_dir prove-died; then
  mkdir t
  cat >t/load.t <<'PL'
use strict;
use warnings;
use Test::More;

ok(1, 'starts');
open(my $fh, '<', 'config.ini') or die "cannot open config.ini: $!";
ok(<$fh>, 'reads a line');
done_testing();
PL
  capture prove-died test_failure 'prove t' 't/load.t' 'cannot open config.ini'
fi
if case_dir perl-die; then
  printf 'use strict;\nuse warnings;\nmy %%ports = (http => 80);\nmy $p = $ports{https} // die "no port for https\\n";\nprint "$p\\n";\n' >ports.pl
  capture perl-die runtime_error 'perl ports.pl' 'no port for https'
fi
if case_dir perl-missing-module; then
  printf 'use strict;\nuse JSON::XS;\nprint encode_json({a => 1});\n' >dump.pl
  capture perl-missing-module missing_dependency 'perl dump.pl' 'JSON/XS.pm'
fi

# --- java ------------------------------------------------------------------------
if case_dir javac-cannot-find-symbol; then
  mkdir -p src/app
  printf 'package app;\n\npublic class Main {\n    public static void main(String[] args) {\n        int n = args.length;\n        System.out.println(count + n);\n    }\n}\n' >src/app/Main.java
  capture javac-cannot-find-symbol build_failure 'javac -d out src/app/Main.java' \
    'src/app/Main.java:6' 'cannot find symbol' finding=src/app/Main.java:6
fi
if case_dir java-exception; then
  printf 'public class Parse {\n    public static void main(String[] args) {\n        String port = System.getenv().getOrDefault("APP_PORT", "eighty");\n        System.out.println(Integer.parseInt(port));\n    }\n}\n' >Parse.java
  capture java-exception runtime_error 'java Parse.java' 'NumberFormatException' 'Parse.java:4' known_miss
fi

# --- maven (offline, Debian's maven-repo) ----------------------------------------
# mvn_project DEPS: a pom.xml using the plugins Debian packages, with DEPS.
mvn_project() {
  mkdir -p src/main/java/app src/test/java/app
  cat >pom.xml <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>app</groupId>
  <artifactId>app</artifactId>
  <version>1.0</version>
  <properties>
    <maven.compiler.source>17</maven.compiler.source>
    <maven.compiler.target>17</maven.compiler.target>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency><groupId>junit</groupId><artifactId>junit</artifactId><version>4.x</version><scope>test</scope></dependency>
    $1
  </dependencies>
  <build>
    <plugins>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.10.1</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-surefire-plugin</artifactId><version>2.22.3</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-resources-plugin</artifactId><version>2.6</version></plugin>
    </plugins>
  </build>
</project>
POM
}
mvn='mvn -o -B -Dstyle.color=never -Dmaven.repo.local=/usr/share/maven-repo'
if case_dir maven-test-failure; then
  mvn_project ''
  printf 'package app;\n\npublic class Calc {\n    public static int add(int a, int b) {\n        return a - b;\n    }\n}\n' >src/main/java/app/Calc.java
  printf 'package app;\n\nimport static org.junit.Assert.assertEquals;\n\nimport org.junit.Test;\n\npublic class CalcTest {\n    @Test\n    public void addsTwoNumbers() {\n        assertEquals(4, Calc.add(2, 2));\n    }\n}\n' >src/test/java/app/CalcTest.java
  capture maven-test-failure test_failure "$mvn -q test" 'addsTwoNumbers' 'expected:<4> but was:<0>' known_miss
fi
if case_dir maven-compile-error; then
  mvn_project ''
  printf 'package app;\n\npublic class Greeter {\n    public String greet(String name) {\n        return "hello " + name\n    }\n}\n' >src/main/java/app/Greeter.java
  capture maven-compile-error build_failure "$mvn compile" 'Greeter.java' "';' expected" known_miss
fi
if case_dir maven-missing-dependency; then
  mvn_project '<dependency><groupId>com.example</groupId><artifactId>widgets</artifactId><version>2.1.0</version></dependency>'
  printf 'package app;\n\npublic class App {}\n' >src/main/java/app/App.java
  capture maven-missing-dependency missing_dependency "$mvn compile" 'com.example:widgets' known_miss
fi

# --- time limits and signals -----------------------------------------------------
if case_dir timeout-python-loop; then
  printf 'import time\nprint("polling the queue", flush=True)\nwhile True:\n    time.sleep(0.1)\n' >poll.py
  capture timeout-python-loop timeout 'timeout 2 python3 poll.py' 'timed out after 2 s'
fi
if case_dir timeout-node-server; then
  printf 'require("http").createServer((q, s) => s.end("ok")).listen(0, () => console.log("listening"));\n' >server.js
  capture timeout-node-server timeout 'timeout -s INT 2 node server.js' 'timed out after 2 s'
fi
if case_dir cpu-limit-xcpu; then
  printf 'print("searching", flush=True)\nn = 0\nwhile True:\n    n += 1\n' >spin.py
  capture cpu-limit-xcpu timeout 'ulimit -St 1; exec python3 spin.py' 'SIGXCPU'
fi
if case_dir python-abort; then
  printf 'import os\nprint("flushing the journal", flush=True)\nos.abort()\n' >abort.py
  capture python-abort runtime_error 'python3 abort.py' 'SIGABRT'
fi
