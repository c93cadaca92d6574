package alphabetsort

import "strings"

// The names synthetic examples draw from, written here, not downloaded,
// so the builtin needs no network: common given and family names from
// many languages.

var firstNames = strings.Fields(`
Aaron Abigail Adrian Aisha Akira Alejandro Alice Amara Amelia Andrea
Anton Arjun Astrid Beatriz Benjamin Bianca Boris Carlos Carmen Chen
Chiara Clara Daniel Dmitri Elena Elias Emeka Emma Farah Felix Fatima
Gabriel Grace Hana Hassan Helena Hugo Ibrahim Ines Ingrid Isaac Ivan
Jakob Jasmine Javier Julia Kai Kamala Kenji Klaus Laila Lars Leila
Lucas Lucia Mahmoud Maya Mei Mikhail Miriam Nadia Naomi Nikolai Nora
Olga Omar Oscar Pablo Paula Pedro Priya Rafael Ravi Rosa Samuel Sara
Sergei Sofia Soren Tariq Thomas Tomas Valentina Victor Wei Yara Yusuf
Zainab Zoe
`)

var lastNames = strings.Fields(`
Abbott Adeyemi Alvarez Andersen Bauer Becker Bianchi Brennan Castillo
Chandra Cohen Costa Dubois Eriksson Fischer Fontaine Garcia Gomez
Gonzalez Gupta Haddad Hansen Hoffmann Horvat Ibrahim Ivanova Jansen
Jensen Kaplan Kato Kaur Khan Kim Kowalski Kumar Larsen Laurent Lehmann
Lindqvist Lopez Marino Martins Mendez Molina Moreau Murphy Nakamura
Navarro Nguyen Nielsen Novak Okafor Oliveira Olsen Park Patel Petrov
Pereira Quinn Ramos Reyes Ricci Rossi Russo Sato Schmidt Schneider
Silva Singh Sokolov Suzuki Tanaka Torres Vargas Vogel Wagner Walsh
Weber Wright Yamamoto Yilmaz Zhang Zielinski
`)

// wordleWords are the builtin secret words of wordle: common five-letter
// English words (TextArena draws from a larger English list).
