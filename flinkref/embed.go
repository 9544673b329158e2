// Package flinkref carries the Java sources of flinkref (the Maven module in
// this directory) inside the statelab binary, so `statelab export-flink` can
// write a Flink project that uses the very operators the conformance tests
// run (Export; the sandbox page offers the same as a zip). The Java is built
// by Maven.
package flinkref

import "embed"

// Project is flinkref's Maven project: pom.xml, the Java sources and the
// logging configuration, at the paths they have in this directory.
//
//go:embed pom.xml src/main/java/org/statelab/flinkref/*.java src/main/resources/log4j2.properties
var Project embed.FS
